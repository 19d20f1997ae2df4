package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/sharedstore/admin"
	spendledger "github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendworker"
)

// ledgerFleet is two gateways on two sharedstore replicas that check spend
// against one Redis and record settlements in one PostgreSQL ledger.
type ledgerFleet struct {
	a, b   *gateway.Gateway
	rdb    *redis.Client
	pool   *pgxpool.Pool
	led    *spendledger.Ledger
	cache  *spendcache.Cache
	worker *spendworker.Worker
}

// ledgerFleetConfig: keys sk-acme-a (id ka, a $0.02 daily limit) and
// sk-acme-b (id kb) of team acme, whose monthly limit is month; gpt-4o at
// $2.50 in and $10 out per million tokens.
func ledgerFleetConfig(month string) string {
	cfg := fleetConfig(`{"per_api_key":{"tokens_per_minute":1000000}}`, fleetToken, 2000, false)
	return strings.TrimSuffix(cfg, "}") + `,"pricing":{"gpt-4o":{"input":"2.50","output":"10"}},` +
		`"spend_limits":{"teams":{"acme":{"month_usd":` + month + `}}},` +
		`"api_keys":[{"key":"sk-acme-a","id":"ka","team":"acme","spend_limit_day_usd":0.02},{"key":"sk-acme-b","id":"kb","team":"acme"}]}`
}

func startLedgerFleet(t *testing.T, pluginConfig string, opts ...gwOpt) ledgerFleet {
	t.Helper()
	ctx := context.Background()
	addr := redistest.Start(t)
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = spendledger.Migrate(ctx, pool)
	require.NoError(t, err)
	led := spendledger.New(pool)
	in, err := money.ParsePrice("2.50")
	require.NoError(t, err)
	out, err := money.ParsePrice("10")
	require.NoError(t, err)
	_, err = led.PutPrices(ctx, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), map[string]pricing.Entry{"gpt-4o": {Base: pricing.Rates{
		Input: in, CachedInput: in, CacheWrite: in, CacheWrite1h: in, Output: out}}}, nil)
	require.NoError(t, err)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	cache := spendcache.New(rdb, led, spendcache.Options{})
	f := ledgerFleet{rdb: rdb, pool: pool, led: led, cache: cache, worker: spendworker.New(led, cache, spendworker.Options{})}
	url := func() string {
		store := server.NewBuckets(rdb, server.Options{Spend: cache})
		h := server.New(server.Config{Buckets: store, Token: fleetToken, Registry: prometheus.NewRegistry(), Ledger: led})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		// as the service serves: the filter's calls through the front
		front := server.NewFront(ln, h, 10*time.Second)
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = front.Serve() }()
		go func() { _ = srv.Serve(front) }()
		t.Cleanup(func() {
			_ = srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = front.Shutdown(ctx)
		})
		return "http://" + ln.Addr().String()
	}
	f.a = startGateway(t, pluginConfig, append([]gwOpt{withClusters(map[string]string{"sharedstore": url()})}, opts...)...)
	f.b = startGateway(t, pluginConfig, append([]gwOpt{withClusters(map[string]string{"sharedstore": url()})}, opts...)...)
	return f
}

// A team's monthly limit is one fleet-wide figure: spend through either
// gateway counts, and once it is reached both refuse.
func TestFleetATeamsMonthlyLimitSpentThroughBothGatewaysRefusesOnBoth(t *testing.T) {
	f := startLedgerFleet(t, ledgerFleetConfig("0.05"))
	gws := []*gateway.Gateway{f.a, f.b}
	admitted := 0
	for i := 0; i < 20; i++ {
		// 1000 output tokens: just over $0.01 each, and at most that
		r := post(t, gws[i%2], "/v1/chat/completions", "sk-acme-b", chat(1000), "x-mock-output-tokens", "1000")
		if r.status != 200 {
			require.Equal(t, 429, r.status, string(r.body))
			break
		}
		admitted++
		// the settlement is asynchronous: let it land before the next call
		require.True(t, waitFor(5*time.Second, func() bool {
			return f.cached(t, spend.Team, "acme", calendar.Month) >= money.Amount(admitted)*10_000_000
		}))
	}
	require.Equal(t, 4, admitted, "$0.05 a month: four calls of just over $0.01 fit, a fifth one's cost does not")
	for _, g := range gws {
		r := post(t, g, "/v1/chat/completions", "sk-acme-b", chat(1000), "x-mock-output-tokens", "1")
		require.Equal(t, 429, r.status, string(r.body))
		require.Contains(t, string(r.body), `"message":"Team monthly spend limit exceeded."`)
	}
	a := post(t, f.a, "/v1/chat/completions", "sk-acme-a", chat(1000), "x-mock-output-tokens", "1")
	require.Equal(t, 429, a.status, "the team's other key is refused too")
}

// After completed, failed, cut and refused calls through both gateways and
// a worker run, every aggregate is the sum of its charges and every cached
// counter is its aggregate plus the estimates still pending.
func TestFleetAfterMixedTrafficEveryAggregateIsItsChargesAndEveryCounterItsAggregatePlusPending(t *testing.T) {
	f := startLedgerFleet(t, ledgerFleetConfig("100"))
	ctx := context.Background()
	var records int64
	countRecords := func() int64 {
		require.NoError(t, f.pool.QueryRow(ctx, "SELECT count(*) FROM inference_records").Scan(&records))
		return records
	}
	for i := 0; i < 4; i++ {
		g := []*gateway.Gateway{f.a, f.b}[i%2]
		// sk-acme-a: just over $0.009 a call (and at most that) against its
		// $0.02 day, so the third and fourth do not fit and are refused
		want := 200
		if i >= 2 {
			want = 429
		}
		r := post(t, g, "/v1/chat/completions", "sk-acme-a", chat(900), "x-mock-output-tokens", "900")
		require.Equal(t, want, r.status, string(r.body))
		require.Equal(t, 200, post(t, g, "/v1/chat/completions", "sk-acme-b", chat(2000), "x-mock-output-tokens", "700").status)
		require.Equal(t, 502, post(t, g, "/v1/chat/completions", "sk-acme-b", chat(2000), "x-mock-status", "502").status)
		cutAfterLines(t, g, "sk-acme-b", chatReq("cut me short", 2000, true), 3, "x-mock-output-tokens", "500", "x-mock-chunk-delay-ms", "20")
		// let this round's settlements land, so ka's day is counted
		require.True(t, waitFor(10*time.Second, func() bool { return countRecords() >= int64(min(i+1, 2)+2*(i+1)) }), "records: %d", records)
	}
	// 2 of ka's, 4 of kb's completed calls and its 4 cut streams; the
	// failed and refused calls have none
	require.True(t, waitFor(10*time.Second, func() bool { return countRecords() == 10 }), "records: %d", records)
	_, err := f.worker.RunOnce(ctx)
	require.NoError(t, err)

	n := requireAggregatesAreTheirCharges(t, f.pool, "acme")
	require.Equal(t, 5, n, "team month, ka day and month, kb day and month")

	day, month, ok := calendar.Both(time.Now().UnixNano())
	require.True(t, ok)
	snap, err := f.led.Snapshot(ctx, "acme", []calendar.Window{day, month})
	require.NoError(t, err)
	for _, c := range []struct {
		scope spend.Scope
		id    string
		w     calendar.Window
	}{{spend.Team, "acme", month}, {spend.APIKey, "ka", day}} {
		want := snap.Figures[spendledger.FigureKey{Scope: c.scope, ID: c.id, Period: c.w.Period, Key: c.w.Key}]
		require.Positive(t, want)
		require.Equal(t, want, f.cached(t, c.scope, c.id, c.w.Period), "%s %s", c.scope, c.id)
	}
}

// cached reads a counter of team acme in the current period; 0 when absent.
func (f ledgerFleet) cached(t *testing.T, scope spend.Scope, id string, p calendar.Period) money.Amount {
	t.Helper()
	return ledgerCounter(t, f.rdb, scope, id, p)
}

// cachedOf reads a counter of team in the current period; 0 when absent.
func (f ledgerFleet) cachedOf(t *testing.T, team string, scope spend.Scope, id string, p calendar.Period) money.Amount {
	t.Helper()
	return teamCounter(t, f.rdb, team, scope, id, p)
}

// With fleet_spend the limits stored in the ledger (the admin API's) apply
// to a team the filter's config gives no limit at all, and so does its
// balance.
func TestFleetALimitStoredOnlyInTheLedgerRefusesOnBothGatewaysWithFleetSpend(t *testing.T) {
	cfg := fleetConfig(`{"per_api_key":{"tokens_per_minute":1000000}}`, fleetToken, 2000, false)
	cfg = strings.Replace(cfg, `"fallback_to_memory":false`, `"fallback_to_memory":false,"fleet_spend":true`, 1)
	cfg = strings.TrimSuffix(cfg, "}") + `,"pricing":{"default":{"input":"2.50","output":"10"}},` +
		`"api_keys":[{"key":"sk-acme-b","id":"kb","team":"acme"},{"key":"sk-beta","id":"kz","team":"beta"}]}`
	f := startLedgerFleet(t, cfg)
	ctx := context.Background()
	require.NoError(t, f.led.PutPolicy(ctx, "acme", spendledger.Policy{Scope: spend.Team, ID: "acme", Period: calendar.Month, Limit: 25_000_000}))
	require.NoError(t, f.led.SetBalance(ctx, "beta", 0))

	gws := []*gateway.Gateway{f.a, f.b}
	for i := 0; i < 2; i++ { // just over $0.01 each (and at most that) against $0.025
		r := post(t, gws[i], "/v1/chat/completions", "sk-acme-b", chat(1000), "x-mock-output-tokens", "1000")
		require.Equal(t, 200, r.status, string(r.body))
		require.True(t, waitFor(5*time.Second, func() bool { return f.cached(t, spend.Team, "acme", calendar.Month) >= money.Amount(i+1)*10_000_000 }))
	}
	for _, g := range gws {
		// a third call's maximum cost does not fit what is left
		r := post(t, g, "/v1/chat/completions", "sk-acme-b", chat(1000), "x-mock-output-tokens", "1")
		require.Equal(t, 429, r.status, string(r.body))
		require.Contains(t, string(r.body), `"message":"Team monthly spend limit exceeded."`)
		z := post(t, g, "/v1/chat/completions", "sk-beta", chat(10), "x-mock-output-tokens", "1")
		require.Equal(t, 429, z.status, string(z.body))
		require.Contains(t, string(z.body), `"code":"balance_exhausted"`)
	}
}

// A team limit stored through the admin API applies with a config that
// names no fleet_spend at all: storage redis and a pricing section send
// every request's spend part. Team t9 gets $1.00 a month by PUT and is
// refused once its calls of $0.50 each reach it; team t8, with no limit
// anywhere, is admitted throughout.
func TestFleetATeamLimitPutThroughTheAdminAPIAppliesWithoutFleetSpendInTheConfig(t *testing.T) {
	cfg := fleetConfig(`{"per_api_key":{"tokens_per_minute":1000000}}`, fleetToken, 2000, false)
	require.NotContains(t, cfg, "fleet_spend")
	cfg = strings.TrimSuffix(cfg, "}") + `,"pricing":{"default":{"input":"0","output":"500"}},` +
		`"api_keys":[{"key":"sk-t9","id":"k9","team":"t9"},{"key":"sk-t8","id":"k8","team":"t8"}]}`
	f := startLedgerFleet(t, cfg)

	adm, err := admin.New(admin.Config{Ledger: f.led, Redis: f.rdb, Token: "admin-secret"})
	require.NoError(t, err)
	api := httptest.NewServer(adm)
	t.Cleanup(api.Close)
	req, err := http.NewRequest("PUT", api.URL+"/v1/admin/teams/t9/spend-limits/team/t9/month", strings.NewReader(`{"limit_usd":"1.00"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer admin-secret")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, 200, res.StatusCode)

	gws := []*gateway.Gateway{f.a, f.b}
	for i := 0; i < 2; i++ { // 1000 output tokens at $500 a million: $0.50 each, and as much reserved
		r := post(t, gws[i], "/v1/chat/completions", "sk-t9", chat(1000), "x-mock-output-tokens", "1000")
		require.Equal(t, 200, r.status, string(r.body))
		require.True(t, waitFor(5*time.Second, func() bool {
			return f.cachedOf(t, "t9", spend.Team, "t9", calendar.Month) >= money.Amount(i+1)*500_000_000
		}))
	}
	require.Equal(t, money.Amount(1_000_000_000), f.cachedOf(t, "t9", spend.Team, "t9", calendar.Month), "t9 spent $1.00")
	for _, g := range gws {
		r := post(t, g, "/v1/chat/completions", "sk-t9", chat(10), "x-mock-output-tokens", "1")
		require.Equal(t, 429, r.status, string(r.body))
		require.Contains(t, string(r.body), `"message":"Team monthly spend limit exceeded."`)
		free := post(t, g, "/v1/chat/completions", "sk-t8", chat(10), "x-mock-output-tokens", "1")
		require.Equal(t, 200, free.status, "a team with no limit is not affected: %s", free.body)
	}
}
