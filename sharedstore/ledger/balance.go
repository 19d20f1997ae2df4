//go:build !wasip1

package ledger

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/tokenbudget/tokenbudget/shared/money"
)

// ErrNoBalance is returned for a top-up of a team whose balance was never
// set: such a team is not limited by a balance, and a top-up must not
// silently start limiting it.
var ErrNoBalance = errors.New("ledger: the team has no balance set")

// ErrTopUpIDReused is returned for a top-up whose id an earlier top-up of
// another team used. (A retry with another amount is a retry: it adds
// nothing.)
var ErrTopUpIDReused = errors.New("ledger: the top-up id was used for another top-up")

// SetBalance sets a team's balance to an amount (an operator's correction
// or the first balance of a team).
func (s *Ledger) SetBalance(ctx context.Context, team string, amount money.Amount) error {
	if team == "" {
		return errors.New("ledger: empty team")
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO team_balances (team, balance) VALUES ($1, $2)
		ON CONFLICT (team) DO UPDATE SET balance = EXCLUDED.balance, updated_at = now()`, team, int64(amount))
	return err
}

// TopUp adds a positive amount to a team's balance once per id: a retried
// top-up (same id) adds nothing and reports applied false. It returns the
// balance after it.
func (s *Ledger) TopUp(ctx context.Context, team, id string, amount money.Amount) (applied bool, balance money.Amount, err error) {
	if id == "" || amount <= 0 {
		return false, 0, errors.New("ledger: a top-up needs an id and a positive amount")
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The balance row first, locked: it orders concurrent top-ups of
		// the team and proves the team has a balance.
		if err := tx.QueryRow(ctx, "SELECT balance FROM team_balances WHERE team = $1 FOR UPDATE", team).Scan(&balance); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNoBalance
			}
			return err
		}
		tag, err := tx.Exec(ctx, "INSERT INTO balance_topups (id, team, amount) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
			id, team, int64(amount))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			// A retry is of the same team: an id another team's top-up
			// used would otherwise answer "already applied" with this
			// team's balance, and add nothing.
			var prevTeam string
			if err := tx.QueryRow(ctx, "SELECT team FROM balance_topups WHERE id = $1", id).Scan(&prevTeam); err != nil {
				return err
			}
			if prevTeam != team {
				return ErrTopUpIDReused
			}
			return nil
		}
		applied = true
		return tx.QueryRow(ctx, "UPDATE team_balances SET balance = balance + $2, updated_at = now() WHERE team = $1 RETURNING balance",
			team, int64(amount)).Scan(&balance)
	})
	if err != nil {
		return false, 0, err
	}
	return applied, balance, nil
}

// Balance is a team's balance; ok is false when none is set.
func (s *Ledger) Balance(ctx context.Context, team string) (balance money.Amount, ok bool, err error) {
	err = s.pool.QueryRow(ctx, "SELECT balance FROM team_balances WHERE team = $1", team).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	return balance, err == nil, err
}
