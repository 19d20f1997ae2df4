//go:build !wasip1

package ledger

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// DefaultBatch is how many records one run of a team charges at most.
const DefaultBatch = 500

// teamLockClass is the first key of the two-key advisory lock a run holds
// on its team; the second is the hash of the team's name. A hash collision
// between two teams only makes one of their runs report Busy and wait for
// the next interval; it never lets two runs process one team.
const teamLockClass = 0x7b_1e_d6

// ErrModelNotPriced is the error recorded on a record whose model has no
// price and no default in the list in effect at its start.
const ErrModelNotPriced = "model_not_priced"

// Worker charges a team's unprocessed records.
type Worker struct {
	store *Ledger
	batch int
	// beforeCommit, when set (tests), runs inside the transaction after
	// every write and before the commit.
	beforeCommit func(ctx context.Context, tx pgx.Tx) error
}

// NewWorker is a worker on the store charging at most batch records per
// run (DefaultBatch when batch ≤ 0).
func NewWorker(s *Ledger, batch int) *Worker {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Worker{store: s, batch: batch}
}

// Charged is one record charged by a run.
type Charged struct {
	ID          string
	Charge      money.Amount
	Estimate    money.Amount
	PriceListID int64
}

// EstimateError is estimate − charge: positive when the filter
// over-estimated, negative when it under-estimated.
func (c Charged) EstimateError() money.Amount { return c.Estimate - c.Charge }

// Unpriced is a record a run could not price; it stays unprocessed (never
// charged $0) with its error counted, and is retried by later runs.
type Unpriced struct {
	ID, Model string
}

// Result is what one run of a team did.
type Result struct {
	// Busy is true when another run held the team: this one did nothing.
	Busy     bool
	Charged  []Charged
	Unpriced []Unpriced
	// Full is true when the batch was full, so more records may wait.
	Full bool
	// AggregateLockWait is how long the run waited for aggregate rows
	// another transaction held (an operator's correction, a second
	// writer); AggregateLockWaited says it had to wait at all.
	AggregateLockWait   time.Duration
	AggregateLockWaited bool
}

type pending struct {
	id, apiKey, user, model string
	kinds                   tokens.Kinds
	start                   time.Time
	dayKey, monthKey        int32
	estimate                money.Amount
}

type aggKey struct {
	scope, id, period string
	key               int32
}

type aggDelta struct {
	amount  int64
	charges int64
}

// lockAggregatesSQL locks the batch's existing aggregate rows in the order
// the upserts write them; the arrays are the rows' keys.
const lockAggregatesSQL = `SELECT count(*) FROM (SELECT 1 FROM spend_aggregates a
	JOIN unnest($2::text[], $3::text[], $4::text[], $5::int[]) AS k(scope, scope_id, period, period_key)
	USING (scope, scope_id, period, period_key)
	WHERE a.team = $1 ORDER BY a.scope, a.scope_id, a.period, a.period_key FOR UPDATE OF a%s) s`

// lockAggregates takes the row locks of the aggregates a batch adds to
// before it writes them, first without waiting (inside a savepoint, since a
// refused lock aborts what it runs in); only when another transaction
// holds one does it wait, and it says for how long. Rows not yet inserted
// have no lock to wait for here.
func lockAggregates(ctx context.Context, tx pgx.Tx, team string, keys []aggKey) (wait time.Duration, waited bool, err error) {
	scopes, ids, periods, pkeys := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys)), make([]int32, len(keys))
	for i, k := range keys {
		scopes[i], ids[i], periods[i], pkeys[i] = k.scope, k.id, k.period, k.key
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, false, err
	}
	_, err = sp.Exec(ctx, fmt.Sprintf(lockAggregatesSQL, " NOWAIT"), team, scopes, ids, periods, pkeys)
	if err == nil {
		return 0, false, sp.Commit(ctx)
	}
	if rbErr := sp.Rollback(ctx); rbErr != nil {
		return 0, false, rbErr
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" { // lock_not_available
		return 0, false, err
	}
	start := time.Now()
	if _, err := tx.Exec(ctx, fmt.Sprintf(lockAggregatesSQL, ""), team, scopes, ids, periods, pkeys); err != nil {
		return 0, true, err
	}
	return time.Since(start), true, nil
}

// RunTeam charges one batch of the team's unprocessed records, in one
// transaction: under the team's advisory lock (pg_try_advisory_xact_lock,
// so a second run on the team returns Busy at once instead of queueing),
// it selects the oldest unprocessed records by call start, prices each with
// the list in effect at its start, inserts its charge, adds the charge to
// the aggregate of every scope and period of the call, and marks it
// processed, and deducts the charges from the team's balance when it has
// one. Any failure rolls all of it back: the records stay
// unprocessed and the next run charges them once.
func (w *Worker) RunTeam(ctx context.Context, team string) (res Result, err error) {
	err = pgx.BeginFunc(ctx, w.store.pool, func(tx pgx.Tx) error {
		res = Result{}
		var locked bool
		if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1, hashtext($2))", int32(teamLockClass), team).Scan(&locked); err != nil {
			return err
		}
		if !locked {
			res.Busy = true
			return nil
		}
		recs, err := w.selectBatch(ctx, tx, team)
		if err != nil {
			return err
		}
		res.Full = len(recs) == w.batch
		if len(recs) == 0 {
			return nil
		}
		lists, err := newPriceLists(ctx, tx)
		if err != nil {
			return err
		}
		deltas := map[aggKey]aggDelta{}
		var total int64
		batch := &pgx.Batch{}
		var ids []string
		for _, r := range recs {
			pl, ok, err := lists.at(ctx, tx, r.start)
			if err != nil {
				return err
			}
			var entry pricing.Entry
			if ok {
				entry, ok = pl.table.Lookup(r.model)
			}
			if !ok {
				res.Unpriced = append(res.Unpriced, Unpriced{ID: r.id, Model: r.model})
				batch.Queue("UPDATE inference_records SET error_count = error_count + 1, last_error = $2 WHERE id = $1",
					r.id, ErrModelNotPriced)
				continue
			}
			charge := pricing.Cost(r.kinds, entry)
			if total += int64(charge); total < 0 {
				return fmt.Errorf("ledger: the batch's charges overflow")
			}
			res.Charged = append(res.Charged, Charged{ID: r.id, Charge: charge, Estimate: r.estimate, PriceListID: pl.id})
			batch.Queue(`INSERT INTO usage_charges (record_id, team, charge, estimated_cost, price_list_id)
				VALUES ($1, $2, $3, $4, $5)`, r.id, team, int64(charge), int64(r.estimate), pl.id)
			ids = append(ids, r.id)
			for _, k := range callScopes(team, r) {
				d := deltas[k]
				d.amount, d.charges = d.amount+int64(charge), d.charges+1
				if d.amount < 0 {
					return fmt.Errorf("ledger: aggregate %v overflows", k)
				}
				deltas[k] = d
			}
		}
		// Aggregate rows in a fixed order, so concurrent writers to the
		// same rows (an admin correction, say) always lock them alike.
		keys := make([]aggKey, 0, len(deltas))
		for k := range deltas {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, b := keys[i], keys[j]
			if a.scope != b.scope {
				return a.scope < b.scope
			}
			if a.id != b.id {
				return a.id < b.id
			}
			if a.period != b.period {
				return a.period < b.period
			}
			return a.key < b.key
		})
		if res.AggregateLockWait, res.AggregateLockWaited, err = lockAggregates(ctx, tx, team, keys); err != nil {
			return err
		}
		for _, k := range keys {
			d := deltas[k]
			batch.Queue(`INSERT INTO spend_aggregates (team, scope, scope_id, period, period_key, amount, charges)
				VALUES ($1, $2, $3, $4, $5, $6, $7)
				ON CONFLICT (team, scope, scope_id, period, period_key) DO UPDATE
				SET amount = spend_aggregates.amount + EXCLUDED.amount,
				    charges = spend_aggregates.charges + EXCLUDED.charges,
				    updated_at = now()`, team, k.scope, k.id, k.period, k.key, d.amount, d.charges)
		}
		if total > 0 {
			// The balance pays the exact charge, in the same transaction,
			// so it and the aggregates never disagree; a team without a
			// balance row is not limited by one and has nothing to pay.
			batch.Queue("UPDATE team_balances SET balance = balance - $2, updated_at = now() WHERE team = $1", team, total)
		}
		if len(ids) > 0 {
			batch.Queue("UPDATE inference_records SET processed = true, processed_at = now() WHERE id = ANY($1) AND NOT processed", ids)
		}
		br := tx.SendBatch(ctx, batch)
		for i := 0; i < batch.Len(); i++ {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return err
			}
			if i == batch.Len()-1 && len(ids) > 0 && tag.RowsAffected() != int64(len(ids)) {
				br.Close()
				return fmt.Errorf("ledger: marked %d of %d records processed", tag.RowsAffected(), len(ids))
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		if w.beforeCommit != nil {
			return w.beforeCommit(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// selectBatch reads the team's oldest unprocessed records. Records that
// failed to price go after the rest, fewest failures first, so unpriceable
// records can neither starve the team's other records nor each other: each
// failure sends a record behind those that failed less often.
func (w *Worker) selectBatch(ctx context.Context, tx pgx.Tx, team string) ([]pending, error) {
	rows, err := tx.Query(ctx, `SELECT id, api_key_id, user_id, model, input_tokens, cached_input_tokens,
		cache_write_tokens, cache_write_1h_tokens, output_tokens, call_start, day_key, month_key, estimated_cost
		FROM inference_records WHERE team = $1 AND NOT processed
		ORDER BY error_count, call_start, id LIMIT $2 FOR UPDATE`, team, w.batch)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pending
	for rows.Next() {
		var p pending
		if err := rows.Scan(&p.id, &p.apiKey, &p.user, &p.model, &p.kinds.Input, &p.kinds.CachedInput,
			&p.kinds.CacheWrite, &p.kinds.CacheWrite1h, &p.kinds.Output, &p.start, &p.dayKey, &p.monthKey,
			&p.estimate); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// callScopes are the aggregates a call adds to: its team's month, and its
// key's and user's day and month when the call has them, whether or not a
// limit is set on them.
func callScopes(team string, r pending) []aggKey {
	ks := make([]aggKey, 0, spend.NumSlots)
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		var id string
		switch s.Scope() {
		case spend.Team:
			id = team
		case spend.APIKey:
			id = r.apiKey
		case spend.User:
			id = r.user
		}
		if id == "" {
			continue
		}
		key := r.monthKey
		if s.Period() == calendar.Day {
			key = r.dayKey
		}
		ks = append(ks, aggKey{scope: s.Scope().String(), id: id, period: s.Period().String(), key: key})
	}
	return ks
}

// priceLists resolves the list in effect at an instant within one run,
// loading each list's entries once.
type priceLists struct {
	ids    []int64
	starts []time.Time
	loaded map[int64]priceList
}

func newPriceLists(ctx context.Context, tx pgx.Tx) (*priceLists, error) {
	rows, err := tx.Query(ctx, "SELECT id, effective_from FROM price_lists ORDER BY effective_from")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	pl := &priceLists{loaded: map[int64]priceList{}}
	for rows.Next() {
		var id int64
		var from time.Time
		if err := rows.Scan(&id, &from); err != nil {
			return nil, err
		}
		pl.ids, pl.starts = append(pl.ids, id), append(pl.starts, from)
	}
	return pl, rows.Err()
}

func (p *priceLists) at(ctx context.Context, tx pgx.Tx, t time.Time) (priceList, bool, error) {
	// The last list whose effective_from ≤ t.
	i := sort.Search(len(p.starts), func(i int) bool { return p.starts[i].After(t) }) - 1
	if i < 0 {
		return priceList{}, false, nil
	}
	id := p.ids[i]
	if l, ok := p.loaded[id]; ok {
		return l, true, nil
	}
	l, err := loadPriceList(ctx, tx, id)
	if err != nil {
		return priceList{}, false, err
	}
	p.loaded[id] = l
	return l, true, nil
}

// PendingTeams lists the teams with unprocessed records, for the worker's
// loop.
func (s *Ledger) PendingTeams(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, "SELECT DISTINCT team FROM inference_records WHERE NOT processed ORDER BY team")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
