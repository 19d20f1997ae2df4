//go:build !wasip1

package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
)

// PriceList is one stored price list as it was put: the entries of named
// models and, when set, the default entry that prices every other model.
type PriceList struct {
	ID            int64
	EffectiveFrom time.Time
	Models        map[string]pricing.Entry
	Default       *pricing.Entry
}

// ErrPricesExist is returned by PutPrices for an instant that already
// starts a list. A list is never replaced: records already charged name the
// list they were priced with, and replacing it would make their charges
// disagree with the prices they cite.
var ErrPricesExist = errors.New("ledger: a price list already takes effect at that instant")

// putPricesError names the unique violation on price_lists.effective_from
// and wraps every other failure of PutPrices.
func putPricesError(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "23505" && pg.ConstraintName == "price_lists_effective_from_key" {
		return ErrPricesExist
	}
	return fmt.Errorf("ledger: put prices: %w", err)
}

// Prices is every stored list, oldest effective_from first, read in one
// snapshot so a list being put is either whole or absent.
func (s *Ledger) Prices(ctx context.Context) ([]PriceList, error) {
	var out []PriceList
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, "SELECT id, effective_from FROM price_lists ORDER BY effective_from")
		if err != nil {
			return err
		}
		for rows.Next() {
			var pl PriceList
			if err := rows.Scan(&pl.ID, &pl.EffectiveFrom); err != nil {
				rows.Close()
				return err
			}
			out = append(out, pl)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range out {
			if out[i].Models, out[i].Default, err = readEntries(ctx, tx, out[i].ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: read prices: %w", err)
	}
	return out, nil
}

// readEntries is the stored entries of list id: its named models and its
// default entry (nil when it has none).
func readEntries(ctx context.Context, q pgx.Tx, id int64) (models map[string]pricing.Entry, def *pricing.Entry, err error) {
	rows, err := q.Query(ctx, `SELECT model, is_default, input, cached_input, cache_write, cache_write_1h, output,
		above_input_tokens, tier_input, tier_cached_input, tier_cache_write, tier_cache_write_1h, tier_output,
		per_request FROM prices WHERE list_id = $1`, id)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	models = map[string]pricing.Entry{}
	for rows.Next() {
		var model string
		var isDefault bool
		var e pricing.Entry
		if err := rows.Scan(&model, &isDefault, &e.Base.Input, &e.Base.CachedInput, &e.Base.CacheWrite,
			&e.Base.CacheWrite1h, &e.Base.Output, &e.AboveInputTokens, &e.Tier.Input, &e.Tier.CachedInput,
			&e.Tier.CacheWrite, &e.Tier.CacheWrite1h, &e.Tier.Output, &e.PerRequest); err != nil {
			return nil, nil, err
		}
		if isDefault {
			d := e
			def = &d
			continue
		}
		models[model] = e
	}
	return models, def, rows.Err()
}

// PriceListAt is the id of the list in effect at t: the latest whose
// effective_from is at or before it (ok false when none is, and the worker
// then prices nothing started at t).
func (s *Ledger) PriceListAt(ctx context.Context, t time.Time) (id int64, ok bool, err error) {
	err = s.pool.QueryRow(ctx, "SELECT id FROM price_lists WHERE effective_from <= $1 ORDER BY effective_from DESC LIMIT 1", t).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("ledger: price list in effect: %w", err)
	}
	return id, true, nil
}
