//go:build !wasip1

package admin

import (
	"context"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

func figures(out map[string]any) map[string]map[string]any {
	byKey := map[string]map[string]any{}
	for _, f := range out["figures"].([]any) {
		m := f.(map[string]any)
		byKey[m["scope"].(string)+"/"+m["id"].(string)] = m
	}
	return byKey
}

func TestTheSpendReportGivesConfirmedPendingAndCachedPerScopeAndID(t *testing.T) {
	f := newFixture(t)
	f.flatPrices()
	start := time.Date(2026, 10, 15, 9, 0, 0, 0, time.UTC)
	// Charged: $2 on key demo by alice, $1 on key ci without a user.
	f.charge(record("c1", "research", "demo", "alice", 2_000_000, start, usd(t, "2.1")),
		record("c2", "research", "ci", "", 1_000_000, start.Add(24*time.Hour), usd(t, "1")))
	// Pending: estimated $0.50 on key demo by alice, not charged yet.
	f.insert(record("p1", "research", "demo", "alice", 500_000, start, usd(t, "0.5")))
	f.ok("PUT", "/v1/admin/teams/research/spend-limits/team/research/month", `{"limit_usd":"200"}`)
	f.ok("PUT", "/v1/admin/teams/research/spend-limits/user/bob/month", `{"limit_usd":"10"}`)
	f.ok("PUT", "/v1/admin/teams/research/spend-limits/api_key/demo/day", `{"limit_usd":"5"}`)
	month, _ := calendar.ParseKey("202610")
	day, _ := calendar.ParseKey("20261015")
	require.NoError(t, f.redis.Set(context.Background(), spendcache.UsageKey("research", spend.Team, "research", month.Period, month.Key), "3500000000", 0).Err())
	require.NoError(t, f.redis.Set(context.Background(), spendcache.UsageKey("research", spend.APIKey, "demo", day.Period, day.Key), "2500000000", 0).Err())

	out := f.ok("GET", "/v1/admin/teams/research/spend?period=202610", "")
	require.Equal(t, "month", out["period"])
	require.Equal(t, "202610", out["period_key"])
	require.NotContains(t, out, "cache_unavailable")
	require.Equal(t, map[string]map[string]any{
		"team/research": {"scope": "team", "id": "research", "limit_usd": "200.00", "confirmed_usd": "3.00", "pending_usd": "0.50", "unpriced_usd": "0.00", "cached_usd": "3.50"},
		"api_key/ci":    {"scope": "api_key", "id": "ci", "limit_usd": nil, "confirmed_usd": "1.00", "pending_usd": "0.00", "unpriced_usd": "0.00", "cached_usd": nil},
		"api_key/demo":  {"scope": "api_key", "id": "demo", "limit_usd": nil, "confirmed_usd": "2.00", "pending_usd": "0.50", "unpriced_usd": "0.00", "cached_usd": nil},
		"user/alice":    {"scope": "user", "id": "alice", "limit_usd": nil, "confirmed_usd": "2.00", "pending_usd": "0.50", "unpriced_usd": "0.00", "cached_usd": nil},
		"user/bob":      {"scope": "user", "id": "bob", "limit_usd": "10.00", "confirmed_usd": "0.00", "pending_usd": "0.00", "unpriced_usd": "0.00", "cached_usd": nil},
	}, figures(out), "every scope with spend or a limit in the month; a key's day limit is not a month figure")
	order := []string{}
	for _, fg := range out["figures"].([]any) {
		order = append(order, fg.(map[string]any)["scope"].(string)+"/"+fg.(map[string]any)["id"].(string))
	}
	require.Equal(t, []string{"team/research", "api_key/ci", "api_key/demo", "user/alice", "user/bob"}, order)

	out = f.ok("GET", "/v1/admin/teams/research/spend?period=20261015", "")
	require.Equal(t, map[string]map[string]any{
		"api_key/demo": {"scope": "api_key", "id": "demo", "limit_usd": "5.00", "confirmed_usd": "2.00", "pending_usd": "0.50", "unpriced_usd": "0.00", "cached_usd": "2.50"},
		"user/alice":   {"scope": "user", "id": "alice", "limit_usd": nil, "confirmed_usd": "2.00", "pending_usd": "0.50", "unpriced_usd": "0.00", "cached_usd": nil},
	}, figures(out), "October 16's call is not in October 15")

	def := f.ok("GET", "/v1/admin/teams/research/spend", "")
	require.Equal(t, "202610", def["period_key"], "without ?period the current UTC month")
	require.Empty(t, f.ok("GET", "/v1/admin/teams/nobody/spend?period=202610", "")["figures"])

	for _, q := range []string{"?period=202613", "?period=20260230", "?period=2026-10", "?period=196912", "?period=202610&period=202611", "?team=x"} {
		st, out := f.call("GET", "/v1/admin/teams/research/spend"+q, "")
		require.Equal(t, http.StatusBadRequest, st, q)
		require.Contains(t, out["error"], "period", q)
	}
}

func TestAChangedLimitKeepsTheSpendAndARemovedOneReturnsFromTheAggregate(t *testing.T) {
	f := newFixture(t)
	f.flatPrices()
	start := time.Date(2026, 10, 2, 9, 0, 0, 0, time.UTC)
	f.charge(record("c1", "research", "demo", "", 4_000_000, start, usd(t, "4")))
	month, _ := calendar.ParseKey("202610")
	cached := spendcache.UsageKey("research", spend.Team, "research", month.Period, month.Key)
	spent := func() map[string]any {
		return figures(f.ok("GET", "/v1/admin/teams/research/spend?period=202610", ""))["team/research"]
	}
	path := "/v1/admin/teams/research/spend-limits/team/research/month"

	f.ok("PUT", path, `{"limit_usd":"10"}`)
	require.NoError(t, f.redis.Set(context.Background(), cached, "4000000000", 0).Err())
	f.ok("PUT", path, `{"limit_usd":"5"}`)
	require.False(t, f.exists(cached), "the counter is reloaded, not carried or reset by the admin API")
	require.Equal(t, "4.00", spent()["confirmed_usd"], "a changed amount keeps the usage")
	require.Equal(t, "5.00", spent()["limit_usd"])

	f.ok("DELETE", path, "")
	require.Nil(t, spent()["limit_usd"], "a removed limit is no longer listed against the spend")
	require.Equal(t, "4.00", spent()["confirmed_usd"], "the ledger still aggregates without a limit")

	f.charge(record("c2", "research", "demo", "", 1_000_000, start, usd(t, "1")))
	f.insert(record("p1", "research", "demo", "", 1_000_000, start, usd(t, "0.25")))
	f.ok("PUT", path, `{"limit_usd":"5"}`)
	got := spent()
	require.Equal(t, "5.00", got["confirmed_usd"], "a re-added limit sees the spend while it was removed")
	require.Equal(t, "0.25", got["pending_usd"])
	require.Nil(t, got["cached_usd"], "the cache loads confirmed + pending on the next admission, never a count of its own")
}

// A record whose model no price list covers stays pending, and the report
// says so: how many such records, their models, and per figure the part
// of pending spend that waits for a price. A record kept in the Redis
// outbox (the ledger was down when it settled) is pending too.
func TestTheSpendReportShowsUnpricedRecordsAndCountsTheOutboxAsPending(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	one := money.Price(money.OneUSD)
	_, err := f.ledger.PutPrices(ctx, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), map[string]pricing.Entry{"m": {Base: pricing.Rates{
		Input: one, CachedInput: one, CacheWrite: one, CacheWrite1h: one, Output: one}}}, nil)
	require.NoError(t, err)
	start := time.Date(2026, 10, 15, 9, 0, 0, 0, time.UTC)
	unpriced := record("u1", "research", "demo", "alice", 1_000_000, start, usd(t, "0.75"))
	unpriced.Model = "gpt-9"
	f.charge(record("c1", "research", "demo", "alice", 2_000_000, start, usd(t, "2")), unpriced)
	kept := record("o1", "research", "ci", "", 1_000_000, start, usd(t, "0.40"))
	added, err := spendcache.New(f.redis, f.ledger, spendcache.Options{}).Keep(ctx, kept)
	require.NoError(t, err)
	require.True(t, added)

	out := f.ok("GET", "/v1/admin/teams/research/spend?period=202610", "")
	require.Equal(t, float64(1), out["unpriced_records"])
	require.Equal(t, []any{"gpt-9"}, out["unpriced_models"])
	figs := figures(out)
	require.Equal(t, map[string]any{"scope": "team", "id": "research", "limit_usd": nil, "confirmed_usd": "2.00",
		"pending_usd": "1.15", "unpriced_usd": "0.75", "cached_usd": nil}, figs["team/research"],
		"pending: the unpriced record and the one in the outbox")
	require.Equal(t, "0.75", figs["api_key/demo"]["unpriced_usd"])
	require.Equal(t, "0.40", figs["api_key/ci"]["pending_usd"], "a figure only the outbox has is listed")
	require.Equal(t, "0.00", figs["api_key/ci"]["unpriced_usd"])

	day := f.ok("GET", "/v1/admin/teams/research/spend?period=20261016", "")
	require.Equal(t, float64(0), day["unpriced_records"], "another day has none")
	require.Equal(t, []any{}, day["unpriced_models"])
}
