package e2e

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	spendledger "github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendworker"
)

// outageLength is how long TestFleetAPostgreSQLOutageUnderSteadyTrafficLosesNoRecord
// cuts the ledger: TOKENBUDGET_PG_OUTAGE (a Go duration), default 3s.
func outageLength(t *testing.T) time.Duration {
	v := os.Getenv("TOKENBUDGET_PG_OUTAGE")
	if v == "" {
		return 3 * time.Second
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "TOKENBUDGET_PG_OUTAGE")
	return d
}

// gpt4o is the entry ledgerFleetConfig prices gpt-4o with.
func gpt4o(t *testing.T) pricing.Entry {
	in, err := money.ParsePrice("2.50")
	require.NoError(t, err)
	out, err := money.ParsePrice("10")
	require.NoError(t, err)
	return pricing.Entry{Base: pricing.Rates{Input: in, CachedInput: in, CacheWrite: in, CacheWrite1h: in, Output: out}}
}

// Two gateways on two sharedstore replicas under steady traffic from four
// clients, while PostgreSQL is cut behind a TCP gate: no record is dropped,
// the $0.02 daily limit of key ka still refuses during the outage, and after
// the drain and a worker run every aggregate is the sum of its charges,
// every cached counter is its aggregate plus pending, and the team's
// confirmed spend is the priced usage the mock served, to the nano-dollar.
func TestFleetAPostgreSQLOutageUnderSteadyTrafficLosesNoRecord(t *testing.T) {
	outage := outageLength(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	addr := redistest.Start(t)
	dbURL := pgtest.Database(t)
	direct, err := pgxpool.New(ctx, dbURL) // the test's own view, never cut
	require.NoError(t, err)
	t.Cleanup(direct.Close)
	_, err = spendledger.Migrate(ctx, direct)
	require.NoError(t, err)
	entry := gpt4o(t)
	_, err = spendledger.New(direct).PutPrices(ctx, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), map[string]pricing.Entry{"gpt-4o": entry}, nil)
	require.NoError(t, err)

	gatedURL, gate := pgtest.Gated(t, dbURL)
	pool, err := pgxpool.New(ctx, gatedURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	led := spendledger.New(pool)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	cache := spendcache.New(rdb, led, spendcache.Options{})
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(stop)
	replica := func() (string, *server.Server) {
		store := server.NewBuckets(rdb, server.Options{Spend: cache})
		h := server.New(server.Config{Buckets: store, Token: fleetToken, Registry: prometheus.NewRegistry(), Ledger: led})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		front := server.NewFront(ln, h, 10*time.Second)
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = front.Serve() }()
		go func() { _ = srv.Serve(front) }()
		t.Cleanup(func() { _ = srv.Close(); _ = front.Close() })
		wg.Add(1)
		go func() { defer wg.Done(); h.RunOutbox(ctx, 200*time.Millisecond) }()
		return "http://" + ln.Addr().String(), h
	}
	worker := spendworker.New(led, cache, spendworker.Options{Interval: time.Second})
	wg.Add(1)
	go func() { defer wg.Done(); _ = worker.Run(ctx) }()

	served := &servedLog{}
	onServed := func(c *gateway.Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add}) }
	// A token budget steady traffic never meets: every call is served.
	cfg := strings.Replace(ledgerFleetConfig("1000"), `"tokens_per_minute":1000000}`, `"tokens_per_minute":1000000000}`, 1)
	require.Contains(t, cfg, `"tokens_per_minute":1000000000}`)
	urlA, _ := replica()
	urlB, _ := replica()
	gws := []*gateway.Gateway{
		startGateway(t, cfg, withClusters(map[string]string{"sharedstore": urlA}), onServed),
		startGateway(t, cfg, withClusters(map[string]string{"sharedstore": urlB}), onServed),
	}

	// Steady traffic on key kb: four clients, both gateways, plain and
	// streamed answers of 1 to 400 tokens.
	var sent atomic.Int64
	traffic, stopTraffic := context.WithCancel(ctx)
	var clients sync.WaitGroup
	for c := 0; c < 4; c++ {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for i := 0; traffic.Err() == nil; i++ {
				g := gws[(c+i)%2]
				out := strconv.Itoa(1 + rand.IntN(400))
				r := post(t, g, "/v1/chat/completions", "sk-acme-b", chatReq("steady traffic", 2000, i%3 == 0), "x-mock-output-tokens", out)
				if r.status != 200 {
					t.Errorf("steady call answered %d: %s", r.status, r.body)
					return
				}
				sent.Add(1)
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}

	// Key ka ($0.02 a day, just over $0.005 a call, as much reserved): one
	// call before the outage (its counter is cached), then during it the
	// counters move with every settlement, so the limit still refuses.
	require.Equal(t, 200, post(t, gws[0], "/v1/chat/completions", "sk-acme-a", chat(500), "x-mock-output-tokens", "500").status)
	ka := 1
	require.True(t, waitFor(10*time.Second, func() bool {
		return ledgerCounter(t, rdb, spend.APIKey, "ka", calendar.Day) >= 5_000_000
	}))
	time.Sleep(time.Second)
	gate.Cut()
	cutAt := time.Now()
	for i := 0; i < 10; i++ {
		r := post(t, gws[i%2], "/v1/chat/completions", "sk-acme-a", chat(500), "x-mock-output-tokens", "500")
		if r.status == 429 {
			break
		}
		require.Equal(t, 200, r.status, string(r.body))
		ka++
		require.True(t, waitFor(10*time.Second, func() bool {
			return ledgerCounter(t, rdb, spend.APIKey, "ka", calendar.Day) >= money.Amount(ka)*5_000_000
		}), "the settlement reached the counter during the outage")
	}
	require.Equal(t, 3, ka, "the $0.02 limit refuses the fourth call while the ledger is down: the two served during it moved the counter")
	time.Sleep(time.Until(cutAt.Add(outage)))
	waiting, err := cache.OutboxLen(ctx, "acme")
	require.NoError(t, err)
	require.Positive(t, waiting, "records wait in the outbox")
	gate.Open()
	time.Sleep(time.Second)
	stopTraffic()
	clients.Wait()
	t.Logf("outage %s: %d steady calls, %d records in the outbox at its end", outage, sent.Load(), waiting)

	// Every served call's record reaches the ledger.
	var records int64
	require.True(t, waitFor(60*time.Second, func() bool {
		n, err := cache.OutboxLen(ctx, "acme")
		require.NoError(t, err)
		require.NoError(t, direct.QueryRow(ctx, "SELECT count(*) FROM inference_records").Scan(&records))
		return n == 0 && records == int64(served.count())
	}), "records %d, served %d", records, served.count())
	for _, g := range gws {
		require.Zero(t, promValue(t, g, "rate_limit_spend_records_dropped_total"), "no record dropped")
	}

	stop()
	wg.Wait()
	// Charge everything (the stopped loop's last transaction may still hold
	// the team for a moment: a run then finds it busy and charges nothing).
	for i := 0; ; i++ {
		st, err := worker.RunOnce(context.Background())
		require.NoError(t, err)
		require.Zero(t, st.Unpriced)
		var pending int64
		require.NoError(t, direct.QueryRow(context.Background(), "SELECT count(*) FROM inference_records WHERE NOT processed").Scan(&pending))
		if pending == 0 && st.Busy == 0 {
			break
		}
		require.Less(t, i, 200, "%d records still pending", pending)
		time.Sleep(50 * time.Millisecond)
	}
	bg := context.Background()
	t.Logf("%d aggregates, each the sum of its charges", requireAggregatesAreTheirCharges(t, direct, "acme"))

	// The priced usage the mock served, call by call (each rounds up once).
	var want money.Amount
	for _, s := range served.all {
		require.Equal(t, 200, s.Status)
		require.True(t, s.Completed)
		want += pricing.Cost(tokens.Kinds{Input: s.InputTokens - s.CachedTokens, CachedInput: s.CachedTokens, Output: s.OutputTokens}, entry)
	}
	day, month, ok := calendar.Both(time.Now().UnixNano())
	require.True(t, ok)
	snap, err := spendledger.New(direct).Snapshot(bg, "acme", []calendar.Window{day, month})
	require.NoError(t, err)
	confirmed := snap.Figures[spendledger.FigureKey{Scope: spend.Team, ID: "acme", Period: calendar.Month, Key: month.Key}]
	require.Equal(t, want, confirmed, "confirmed spend is the priced usage served")
	for _, c := range []struct {
		scope spend.Scope
		id    string
		w     calendar.Window
	}{{spend.Team, "acme", month}, {spend.APIKey, "ka", day}} {
		k := spendledger.FigureKey{Scope: c.scope, ID: c.id, Period: c.w.Period, Key: c.w.Key}
		require.Equal(t, snap.Figures[k], ledgerCounter(t, rdb, c.scope, c.id, c.w.Period), "%s %s: cached = aggregate + pending", c.scope, c.id)
	}
	t.Logf("outage %s: %d records, %d dropped, confirmed %s = priced usage served %s", outage, records, 0, confirmed, want)
}

// ledgerCounter reads one of team acme's counters of the current period; 0
// when absent.
func ledgerCounter(t *testing.T, rdb *redis.Client, scope spend.Scope, id string, p calendar.Period) money.Amount {
	t.Helper()
	return teamCounter(t, rdb, "acme", scope, id, p)
}

// teamCounter reads a cached counter of team in the current period; 0 when absent.
func teamCounter(t *testing.T, rdb *redis.Client, team string, scope spend.Scope, id string, p calendar.Period) money.Amount {
	t.Helper()
	w, ok := calendar.At(p, time.Now().UnixNano())
	require.True(t, ok)
	v, err := rdb.Get(context.Background(), spendcache.UsageKey(team, scope, id, p, w.Key)).Int64()
	if err == redis.Nil {
		return 0
	}
	require.NoError(t, err)
	return money.Amount(v)
}

// requireAggregatesAreTheirCharges checks every aggregate of team against
// the sum and count of the charges of its scope and period, and returns
// how many aggregates there are.
func requireAggregatesAreTheirCharges(t *testing.T, pool *pgxpool.Pool, team string) int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT a.scope, a.scope_id, a.period, a.period_key, a.amount, a.charges,
		(SELECT coalesce(sum(c.charge), 0)::bigint FROM usage_charges c JOIN inference_records r ON r.id = c.record_id
		  WHERE r.team = a.team AND (CASE a.period WHEN 'day' THEN r.day_key ELSE r.month_key END) = a.period_key
		    AND (CASE a.scope WHEN 'team' THEN true WHEN 'api_key' THEN r.api_key_id = a.scope_id ELSE r.user_id = a.scope_id END)),
		(SELECT count(*) FROM usage_charges c JOIN inference_records r ON r.id = c.record_id
		  WHERE r.team = a.team AND (CASE a.period WHEN 'day' THEN r.day_key ELSE r.month_key END) = a.period_key
		    AND (CASE a.scope WHEN 'team' THEN true WHEN 'api_key' THEN r.api_key_id = a.scope_id ELSE r.user_id = a.scope_id END))
		FROM spend_aggregates a WHERE a.team = $1`, team)
	require.NoError(t, err)
	defer rows.Close()
	n := 0
	for rows.Next() {
		var scope, id, period string
		var key int32
		var amount, charges, sum, count int64
		require.NoError(t, rows.Scan(&scope, &id, &period, &key, &amount, &charges, &sum, &count))
		require.Equal(t, sum, amount, "%s %s %s %d", scope, id, period, key)
		require.Equal(t, count, charges, "%s %s %s %d", scope, id, period, key)
		n++
	}
	require.NoError(t, rows.Err())
	require.Positive(t, n)
	return n
}

// startLedgerReplica is a stoppable sharedstore replica (see replica) that
// checks spend against cache and records settlements in led.
func startLedgerReplica(t *testing.T, rdb *redis.Client, cache *spendcache.Cache, led *spendledger.Ledger) *replica {
	t.Helper()
	reg := prometheus.NewRegistry()
	r := &replica{t: t, rdb: rdb, reg: reg}
	r.h = server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{Spend: cache}), Token: fleetToken,
		Registry: reg, Ledger: led})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(r.Stop)
	return r
}

// The compiled filter keeps a settlement whose sharedstore is unreachable
// for nine minutes of its clock (it used to drop it after 30 s): the
// stream admitted before the outage ends during it, its settlement is
// retried from the tick, and its record reaches the ledger once the
// replica is back. Nothing is dropped.
func TestFleetTheFilterKeepsASettlementThroughANineMinuteSharedstoreOutage(t *testing.T) {
	ctx := context.Background()
	f := startLedgerFleet(t, ledgerFleetConfig("1000"))
	r := startLedgerReplica(t, f.rdb, f.cache, f.led)
	clock := &frozenClock{t: time.Now()}
	g := startGateway(t, ledgerFleetConfig("1000"), withClusters(map[string]string{"sharedstore": r.URL()}), withClock(clock))
	records := func() int {
		var n int
		require.NoError(t, f.pool.QueryRow(ctx, "SELECT count(*) FROM inference_records").Scan(&n))
		return n
	}

	res, br := openStream(t, g, "sk-acme-b", chatReq("a long answer", 2000, true), "x-mock-output-tokens", "50", "x-mock-chunk-delay-ms", "20")
	r.Stop()
	_, err := io.Copy(io.Discard, br)
	require.NoError(t, err)
	_ = res.Body.Close()
	tick := func() { // the filter's tick, half a second of its clock later
		clock.mu.Lock()
		clock.t = clock.t.Add(500 * time.Millisecond)
		clock.mu.Unlock()
		g.Host().Tick()
	}
	for elapsed := time.Duration(0); elapsed < 9*time.Minute; elapsed += 500 * time.Millisecond {
		tick()
	}
	require.Zero(t, records(), "the ledger has not heard of it yet")
	require.Zero(t, promValue(t, g, "rate_limit_spend_records_dropped_total"))

	r.Restart()
	require.True(t, waitFor(30*time.Second, func() bool {
		tick()
		return records() == 1
	}), "the record reaches the ledger after the outage")
	require.Zero(t, promValue(t, g, "rate_limit_spend_records_dropped_total"), "nothing dropped")
	require.Zero(t, promValue(t, g, "rate_limit_store_calls_dropped_total"))
}
