//go:build !wasip1

// Package ledger is the durable half of the fleet spend limits: the
// PostgreSQL record of every settled call (inserted exactly once, by hold
// id), its exact charge, and the per-scope-per-period aggregates the Redis
// counters are refreshed from, with the worker transaction that turns
// records into charges.
//
// Money is nano-USD (package money) in BIGINT columns, never a float or a
// numeric. A call belongs to the UTC day and month of its start at the
// gateway (package calendar), fixed when the record is inserted, so a call
// started just before midnight at the month's end and processed later
// counts in the periods it started in.
//
// Native only: it is not compiled into the .wasm.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// Ledger is the spend ledger on one PostgreSQL database.
type Ledger struct {
	pool *pgxpool.Pool
}

// New wraps a pool whose database has been migrated (Migrate).
func New(pool *pgxpool.Pool) *Ledger { return &Ledger{pool: pool} }

// Record is one settled call as the filter reports it: the hold id is the
// record's id, the usage is split by kind, and Estimate is what the filter
// priced it at with its own price list.
type Record struct {
	ID                 string
	Team, APIKey, User string
	Model              string
	Usage              tokens.Kinds
	CallStart          time.Time
	Estimate           money.Amount
}

// ErrInvalidRecord wraps every reason InsertRecord refuses a record.
var ErrInvalidRecord = errors.New("ledger: invalid record")

func (r *Record) validate() (day, month calendar.Window, err error) {
	bad := func(why string) error { return fmt.Errorf("%w: %s", ErrInvalidRecord, why) }
	switch {
	case r.ID == "":
		return day, month, bad("empty id")
	case r.Team == "":
		return day, month, bad("empty team")
	case r.Model == "":
		return day, month, bad("empty model")
	case r.Estimate < 0:
		return day, month, bad("negative estimate")
	case r.Usage.Input < 0 || r.Usage.CachedInput < 0 || r.Usage.CacheWrite < 0 || r.Usage.CacheWrite1h < 0 || r.Usage.Output < 0:
		return day, month, bad("negative token count")
	}
	for _, text := range []string{r.ID, r.Team, r.APIKey, r.User, r.Model} {
		// PostgreSQL text holds neither (the insert would fail for ever).
		if !utf8.ValidString(text) || strings.IndexByte(text, 0) >= 0 {
			return day, month, bad("text that is not UTF-8 or holds a NUL byte")
		}
	}
	day, month, ok := calendar.Both(r.CallStart.UnixNano())
	if !ok || r.CallStart.Year() > 9999 { // period keys have four-digit years
		return day, month, bad("call start out of range")
	}
	return day, month, nil
}

const insertRecordSQL = `INSERT INTO inference_records
	(id, team, api_key_id, user_id, model, input_tokens, cached_input_tokens, cache_write_tokens,
	 cache_write_1h_tokens, output_tokens, call_start, day_key, month_key, estimated_cost)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
	ON CONFLICT (id) DO NOTHING`

// Check reports why InsertRecord would refuse r (ErrInvalidRecord), or nil:
// for a record kept elsewhere while the ledger cannot be reached.
func (r *Record) Check() error {
	_, _, err := r.validate()
	return err
}

// InsertRecord stores a record once: a replayed or retried record (same
// id) inserts nothing and reports inserted false, whatever its contents,
// so only the first settlement of a hold goes on to the cache postflight.
func (s *Ledger) InsertRecord(ctx context.Context, r Record) (inserted bool, err error) {
	day, month, err := r.validate()
	if err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, insertRecordSQL,
		r.ID, r.Team, r.APIKey, r.User, r.Model, r.Usage.Input, r.Usage.CachedInput, r.Usage.CacheWrite,
		r.Usage.CacheWrite1h, r.Usage.Output, r.CallStart, int32(day.Key), int32(month.Key), int64(r.Estimate))
	if err != nil {
		return false, recordError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// InsertRecords stores records as InsertRecord does, each once by hold id,
// in one round trip: the outbox drain's insert. A record already stored
// (it reached the ledger by another path) inserts nothing; inserted counts
// the new ones. An invalid record refuses the whole call before anything
// is sent.
func (s *Ledger) InsertRecords(ctx context.Context, rs []Record) (inserted int, err error) {
	b := &pgx.Batch{}
	for i := range rs {
		r := &rs[i]
		day, month, err := r.validate()
		if err != nil {
			return 0, fmt.Errorf("record %q: %w", r.ID, err)
		}
		b.Queue(insertRecordSQL, r.ID, r.Team, r.APIKey, r.User, r.Model, r.Usage.Input, r.Usage.CachedInput,
			r.Usage.CacheWrite, r.Usage.CacheWrite1h, r.Usage.Output, r.CallStart, int32(day.Key), int32(month.Key),
			int64(r.Estimate))
	}
	if b.Len() == 0 {
		return 0, nil
	}
	br := s.pool.SendBatch(ctx, b)
	for range rs {
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return 0, recordError(err)
		}
		inserted += int(tag.RowsAffected())
	}
	return inserted, br.Close()
}

// recordError makes a refusal of the database that no retry can cure (a
// data exception or an integrity violation, such as a NUL byte in a text
// column) an ErrInvalidRecord, so the record is refused rather than
// retried, or kept waiting, for ever.
func recordError(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (strings.HasPrefix(pg.Code, "22") || strings.HasPrefix(pg.Code, "23")) {
		return fmt.Errorf("%w: %s (%s)", ErrInvalidRecord, pg.Message, pg.Code)
	}
	return err
}

// Ping reports whether the database answers.
func (s *Ledger) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// PutPrices stores a whole price list effective from the given instant:
// calls started at or after it (until a later list) are charged at it.
// def, when not nil, prices every model without its own entry.
func (s *Ledger) PutPrices(ctx context.Context, effectiveFrom time.Time, models map[string]pricing.Entry, def *pricing.Entry) (listID int64, err error) {
	for name := range models {
		if name == "" {
			return 0, errors.New("ledger: a price entry needs a model name")
		}
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "INSERT INTO price_lists (effective_from) VALUES ($1) RETURNING id", effectiveFrom).Scan(&listID); err != nil {
			return err
		}
		put := func(model string, isDefault bool, e pricing.Entry) error {
			_, err := tx.Exec(ctx, `INSERT INTO prices (list_id, model, is_default, input, cached_input, cache_write,
				cache_write_1h, output, above_input_tokens, tier_input, tier_cached_input, tier_cache_write,
				tier_cache_write_1h, tier_output, per_request)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
				listID, model, isDefault, int64(e.Base.Input), int64(e.Base.CachedInput), int64(e.Base.CacheWrite),
				int64(e.Base.CacheWrite1h), int64(e.Base.Output), e.AboveInputTokens, int64(e.Tier.Input),
				int64(e.Tier.CachedInput), int64(e.Tier.CacheWrite), int64(e.Tier.CacheWrite1h), int64(e.Tier.Output),
				int64(e.PerRequest))
			return err
		}
		for name, e := range models {
			if err := put(name, false, e); err != nil {
				return err
			}
		}
		if def != nil {
			return put("", true, *def)
		}
		return nil
	})
	if err != nil {
		return 0, putPricesError(err)
	}
	return listID, nil
}

// priceList is one stored list compiled for pricing.
type priceList struct {
	id    int64
	table *pricing.Table
}

// loadPriceList compiles the stored list id into a pricing table.
func loadPriceList(ctx context.Context, q pgx.Tx, id int64) (pl priceList, err error) {
	models, def, err := readEntries(ctx, q, id)
	if err != nil {
		return pl, err
	}
	return priceList{id: id, table: pricing.NewTable(models, def)}, nil
}

// Figure is one scope's amount in one period.
type Figure struct {
	Scope  spend.Scope
	ID     string
	Period calendar.Period
	Key    uint32
	Amount money.Amount
}

func scopeOf(s string) spend.Scope {
	switch s {
	case "team":
		return spend.Team
	case "api_key":
		return spend.APIKey
	case "user":
		return spend.User
	}
	return 0
}

func periodOf(s string) calendar.Period {
	switch s {
	case "day":
		return calendar.Day
	case "month":
		return calendar.Month
	}
	return 0
}

// ErrBadPeriodKey is returned for a period key that is neither YYYYMM nor
// YYYYMMDD.
var ErrBadPeriodKey = errors.New("ledger: period key is neither YYYYMM nor YYYYMMDD")

// Aggregates is the confirmed spend of every scope of a team in one period
// (periodKey YYYYMM or YYYYMMDD), ordered by scope and id.
func (s *Ledger) Aggregates(ctx context.Context, team, periodKey string) ([]Figure, error) {
	w, ok := calendar.ParseKey(periodKey)
	if !ok {
		return nil, ErrBadPeriodKey
	}
	rows, err := s.pool.Query(ctx, `SELECT scope, scope_id, period, amount FROM spend_aggregates
		WHERE team = $1 AND period = $2 AND period_key = $3 ORDER BY scope, scope_id`,
		team, w.Period.String(), int32(w.Key))
	if err != nil {
		return nil, err
	}
	return collectFigures(rows, w.Key)
}

// PendingEstimates is, per scope and id of a team in one period, the sum of
// the estimates of records not yet processed: the cache refresh sets a
// counter to its aggregate plus this, so a refresh never forgets spend that
// was admitted but not yet charged.
func (s *Ledger) PendingEstimates(ctx context.Context, team, periodKey string) ([]Figure, error) {
	return s.pendingEstimates(ctx, team, periodKey, "")
}

// unpricedCond selects the records a run could not price: they wait for
// a price list that names their model (or has a default).
const unpricedCond = " AND last_error = '" + ErrModelNotPriced + "'"

// UnpricedEstimates is the part of PendingEstimates whose records the
// worker found no price for, with how many such records the period holds
// and their models: spend that stays pending until a price list covers it.
func (s *Ledger) UnpricedEstimates(ctx context.Context, team, periodKey string) (figs []Figure, records int64, models []string, err error) {
	figs, err = s.pendingEstimates(ctx, team, periodKey, unpricedCond)
	if err != nil {
		return nil, 0, nil, err
	}
	w, _ := calendar.ParseKey(periodKey)
	col := "month_key"
	if w.Period == calendar.Day {
		col = "day_key"
	}
	err = s.pool.QueryRow(ctx, `SELECT count(*), coalesce(array_agg(DISTINCT model ORDER BY model), '{}') FROM inference_records
		WHERE team = $1 AND `+col+` = $2 AND NOT processed`+unpricedCond, team, int32(w.Key)).Scan(&records, &models)
	if err != nil {
		return nil, 0, nil, err
	}
	return figs, records, models, nil
}

func (s *Ledger) pendingEstimates(ctx context.Context, team, periodKey, cond string) ([]Figure, error) {
	w, ok := calendar.ParseKey(periodKey)
	if !ok {
		return nil, ErrBadPeriodKey
	}
	var q string
	if w.Period == calendar.Month {
		q = `SELECT scope, scope_id, 'month', sum(est)::bigint FROM (
				SELECT 'team' AS scope, team AS scope_id, estimated_cost AS est FROM inference_records
					WHERE team = $1 AND month_key = $2 AND NOT processed` + cond + `
				UNION ALL
				SELECT 'api_key', api_key_id, estimated_cost FROM inference_records
					WHERE team = $1 AND month_key = $2 AND NOT processed AND api_key_id <> ''` + cond + `
				UNION ALL
				SELECT 'user', user_id, estimated_cost FROM inference_records
					WHERE team = $1 AND month_key = $2 AND NOT processed AND user_id <> ''` + cond + `
			) p GROUP BY scope, scope_id ORDER BY scope, scope_id`
	} else {
		q = `SELECT scope, scope_id, 'day', sum(est)::bigint FROM (
				SELECT 'api_key' AS scope, api_key_id AS scope_id, estimated_cost AS est FROM inference_records
					WHERE team = $1 AND day_key = $2 AND NOT processed AND api_key_id <> ''` + cond + `
				UNION ALL
				SELECT 'user', user_id, estimated_cost FROM inference_records
					WHERE team = $1 AND day_key = $2 AND NOT processed AND user_id <> ''` + cond + `
			) p GROUP BY scope, scope_id ORDER BY scope, scope_id`
	}
	rows, err := s.pool.Query(ctx, q, team, int32(w.Key))
	if err != nil {
		return nil, err
	}
	return collectFigures(rows, w.Key)
}

func collectFigures(rows pgx.Rows, key uint32) ([]Figure, error) {
	defer rows.Close()
	var out []Figure
	for rows.Next() {
		var scope, id, period string
		var amount int64
		if err := rows.Scan(&scope, &id, &period, &amount); err != nil {
			return nil, err
		}
		out = append(out, Figure{Scope: scopeOf(scope), ID: id, Period: periodOf(period), Key: key, Amount: money.Amount(amount)})
	}
	return out, rows.Err()
}
