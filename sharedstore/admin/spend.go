//go:build !wasip1

package admin

import (
	"context"
	"errors"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"net/http"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// spendJSON is GET …/spend: a team's spend in one period window, per scope
// and id. Confirmed is the ledger's aggregate of charged calls, Pending the
// estimates of calls not yet charged (those in the Redis outbox, waiting
// for the ledger, included), Unpriced the part of Pending the worker found
// no price for, Cached the spend cache's counter
// (null when not cached: the next admission loads it as confirmed plus
// pending). A scope and id appear when they have a limit in that period or
// any spend in it.
type spendJSON struct {
	Team      string       `json:"team"`
	Period    string       `json:"period"`
	PeriodKey string       `json:"period_key"`
	Figures   []figureJSON `json:"figures"`
	// UnpricedRecords is how many of the period's pending records the
	// worker found no price for (UnpricedModels their models): they stay
	// pending at their estimates until a price list covers them
	// (PUT /v1/admin/prices).
	UnpricedRecords int64    `json:"unpriced_records"`
	UnpricedModels  []string `json:"unpriced_models"`
	// CacheUnavailable is set when Redis could not be read: the ledger's
	// figures are still given, without the outbox's records.
	CacheUnavailable bool `json:"cache_unavailable,omitempty"`
}

type figureJSON struct {
	Scope        string  `json:"scope"`
	ID           string  `json:"id"`
	LimitUSD     *string `json:"limit_usd"`
	ConfirmedUSD string  `json:"confirmed_usd"`
	PendingUSD   string  `json:"pending_usd"`
	UnpricedUSD  string  `json:"unpriced_usd"`
	CachedUSD    *string `json:"cached_usd"`
}

type figureKey struct {
	scope spend.Scope
	id    string
}

type figure struct {
	limit                        *money.Amount
	confirmed, pending, unpriced money.Amount
}

// spendReport answers ?period=YYYYMM or YYYYMMDD (default: the current
// UTC month).
func (s *Server) spendReport(ctx context.Context, r *http.Request, _ []byte) (int, any) {
	team, err := teamOf(r)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	q := r.URL.Query()
	if len(q) > 1 || (len(q) == 1 && !q.Has("period")) || len(q["period"]) > 1 {
		return fail(http.StatusBadRequest, "query: takes one parameter, period=YYYYMM or period=YYYYMMDD")
	}
	key := q.Get("period")
	if key == "" {
		w, _ := calendar.At(calendar.Month, s.now().UnixNano())
		key = w.KeyString()
	}
	w, ok := calendar.ParseKey(key)
	if !ok {
		return fail(http.StatusBadRequest, "period "+quote(key)+": must be a month YYYYMM or a day YYYYMMDD that exists, from 1970")
	}
	figs := map[figureKey]*figure{}
	at := func(sc spend.Scope, id string) *figure {
		k := figureKey{sc, id}
		if figs[k] == nil {
			figs[k] = &figure{}
		}
		return figs[k]
	}
	policies, err := s.ledger.Policies(ctx, team)
	if err != nil {
		return s.ledgerFailed("read spend", err)
	}
	for _, p := range policies {
		if p.Period == w.Period {
			l := p.Limit
			at(p.Scope, p.ID).limit = &l
		}
	}
	agg, err := s.ledger.Aggregates(ctx, team, key)
	if err != nil {
		return s.ledgerFailed("read spend", err)
	}
	pend, err := s.ledger.PendingEstimates(ctx, team, key)
	if err != nil {
		return s.ledgerFailed("read spend", err)
	}
	unpriced, unpricedRecords, unpricedModels, err := s.ledger.UnpricedEstimates(ctx, team, key)
	if err != nil {
		return s.ledgerFailed("read spend", err)
	}
	for _, f := range agg {
		at(f.Scope, f.ID).confirmed = f.Amount
	}
	for _, f := range pend {
		at(f.Scope, f.ID).pending = f.Amount
	}
	for _, f := range unpriced {
		at(f.Scope, f.ID).unpriced = f.Amount
	}
	outbox, _, outboxErr := spendcache.OutboxPending(ctx, s.redis, team)
	for k, v := range outbox {
		if k.Period == w.Period && k.Key == w.Key {
			at(k.Scope, k.ID).pending += v
		}
	}
	keys := make([]figureKey, 0, len(figs))
	for k := range figs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].scope != keys[j].scope {
			return keys[i].scope < keys[j].scope
		}
		return keys[i].id < keys[j].id
	})
	out := spendJSON{Team: team, Period: w.Period.String(), PeriodKey: key, Figures: make([]figureJSON, 0, len(keys)),
		UnpricedRecords: unpricedRecords, UnpricedModels: unpricedModels}
	cached, err := s.cachedUsage(ctx, team, w, keys)
	if err = errors.Join(outboxErr, err); err != nil {
		s.log.Warn("admin: spend cache unreadable", "team", team, "error", err)
		out.CacheUnavailable = true
	}
	for i, k := range keys {
		f := figs[k]
		fj := figureJSON{Scope: k.scope.String(), ID: k.id, ConfirmedUSD: f.confirmed.String(), PendingUSD: f.pending.String(),
			UnpricedUSD: f.unpriced.String()}
		if f.limit != nil {
			l := f.limit.String()
			fj.LimitUSD = &l
		}
		if cached != nil {
			fj.CachedUSD = cached[i]
		}
		out.Figures = append(out.Figures, fj)
	}
	return http.StatusOK, out
}

// cachedUsage reads each figure's usage key in one pipeline: nil for an
// absent key.
func (s *Server) cachedUsage(ctx context.Context, team string, w calendar.Window, keys []figureKey) ([]*string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	node, err := nodeFor(ctx, s.redis, spendcache.PolicyKey(team))
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.StringCmd, len(keys))
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, spendcache.UsageKey(team, k.scope, k.id, w.Period, w.Key))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]*string, len(keys))
	for i, c := range cmds {
		if v, err := c.Result(); err == nil {
			out[i] = nanoText(v)
		}
	}
	return out, nil
}

// quote is strconv.Quote of a query value, cut to a length a log and an
// answer can carry.
func quote(s string) string {
	if len(s) > 40 {
		s = s[:40]
	}
	return strconv.Quote(s)
}
