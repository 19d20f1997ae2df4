//go:build !wasip1

package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// FigureKey names one spend counter: a scope and id of a team in one
// period.
type FigureKey struct {
	Scope  spend.Scope
	ID     string
	Period calendar.Period
	Key    uint32
}

// Snapshot is what the Redis cache is filled and refreshed from, read in
// one consistent view of the database: a team's policies, its balance
// and, per scope, id and requested period, the confirmed aggregate plus the
// estimates of records not yet processed.
type Snapshot struct {
	Policies []Policy
	// Balance is the ledger balance less the estimates of every
	// unprocessed record of the team (the worker deducts a record's charge
	// from the balance when it processes it). HasBalance is false when the
	// team has none, and is then not limited by one.
	Balance    money.Amount
	HasBalance bool
	// Figures holds every counter with an aggregate or a pending estimate
	// in the requested periods; a counter absent here starts at 0.
	Figures map[FigureKey]money.Amount
}

// Snapshot reads a team's policies, balance and the figures of the given
// periods in one read-only REPEATABLE READ transaction, so a worker commit
// between two of its reads (moving an estimate from pending to an
// aggregate) is never counted twice or not at all.
func (s *Ledger) Snapshot(ctx context.Context, team string, periods []calendar.Window) (snap Snapshot, err error) {
	snap.Figures = map[FigureKey]money.Amount{}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		pols, err := readPolicies(ctx, tx, team)
		if err != nil {
			return err
		}
		snap.Policies = pols
		var bal, pending int64
		var has bool
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT balance FROM team_balances WHERE team = $1), 0),
			EXISTS (SELECT 1 FROM team_balances WHERE team = $1),
			coalesce((SELECT sum(estimated_cost) FROM inference_records WHERE team = $1 AND NOT processed), 0)::bigint`,
			team).Scan(&bal, &has, &pending); err != nil {
			return fmt.Errorf("ledger: read balance: %w", err)
		}
		snap.HasBalance = has
		if has {
			snap.Balance = money.Amount(bal - pending)
		}
		for _, w := range periods {
			if err := addFigures(ctx, tx, team, w, snap.Figures); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Snapshot{}, err
	}
	return snap, nil
}

// addFigures adds the aggregate and the pending estimates of every scope
// and id of the team in period w to into.
func addFigures(ctx context.Context, tx pgx.Tx, team string, w calendar.Window, into map[FigureKey]money.Amount) error {
	col := "month_key"
	if w.Period == calendar.Day {
		col = "day_key"
	}
	// A team has no daily counter; its key and user counters have both.
	teamPart := ""
	if w.Period == calendar.Month {
		teamPart = `SELECT 'team', team, estimated_cost FROM inference_records
				WHERE team = $1 AND ` + col + ` = $3 AND NOT processed
			UNION ALL `
	}
	rows, err := tx.Query(ctx, `SELECT scope, scope_id, sum(amount)::bigint FROM (
			SELECT scope, scope_id, amount FROM spend_aggregates WHERE team = $1 AND period = $2 AND period_key = $3
			UNION ALL `+teamPart+`
			SELECT 'api_key', api_key_id, estimated_cost FROM inference_records
				WHERE team = $1 AND `+col+` = $3 AND NOT processed AND api_key_id <> ''
			UNION ALL
			SELECT 'user', user_id, estimated_cost FROM inference_records
				WHERE team = $1 AND `+col+` = $3 AND NOT processed AND user_id <> ''
		) f GROUP BY scope, scope_id`, team, w.Period.String(), int32(w.Key))
	if err != nil {
		return fmt.Errorf("ledger: read figures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var scope, id string
		var amount int64
		if err := rows.Scan(&scope, &id, &amount); err != nil {
			return fmt.Errorf("ledger: read figures: %w", err)
		}
		into[FigureKey{Scope: scopeOf(scope), ID: id, Period: w.Period, Key: w.Key}] = money.Amount(amount)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ledger: read figures: %w", err)
	}
	return nil
}

// ActiveTeams lists the teams the worker refreshes: those with unprocessed
// records, and those with any confirmed spend in the month monthKey, so a
// run with no new charges still rewrites the current periods' counters.
func (s *Ledger) ActiveTeams(ctx context.Context, monthKey uint32) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT team FROM inference_records WHERE NOT processed
		UNION SELECT team FROM spend_aggregates WHERE period = 'month' AND period_key = $1
		ORDER BY 1`, int32(monthKey))
	if err != nil {
		return nil, fmt.Errorf("ledger: list active teams: %w", err)
	}
	teams, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("ledger: list active teams: %w", err)
	}
	return teams, nil
}

// OldestPending is when the oldest unprocessed record was received (ok
// false when none waits): the worker's lag.
func (s *Ledger) OldestPending(ctx context.Context) (at time.Time, ok bool, err error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx, "SELECT min(received_at) FROM inference_records WHERE NOT processed").Scan(&t); err != nil {
		return time.Time{}, false, fmt.Errorf("ledger: oldest pending record: %w", err)
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}
