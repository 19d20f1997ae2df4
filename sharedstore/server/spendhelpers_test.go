package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendworker"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// countingLedger counts the cache's snapshot reads, optionally slowed so
// concurrent misses overlap.
type countingLedger struct {
	*ledger.Ledger
	reads atomic.Int64
	delay time.Duration
}

func (l *countingLedger) Snapshot(ctx context.Context, team string, ws []calendar.Window) (ledger.Snapshot, error) {
	l.reads.Add(1)
	time.Sleep(l.delay)
	return l.Ledger.Snapshot(ctx, team, ws)
}

// spendEnv is sharedstore over real HTTP with a spend cache on one Redis
// (single or cluster) and a ledger on a database of the test's own.
type spendEnv struct {
	env
	clock  *clock
	led    *countingLedger
	pool   *pgxpool.Pool
	dbURL  string
	cache  *spendcache.Cache
	store  *Buckets
	srv    *Server
	http   *httptest.Server
	worker *spendworker.Worker
}

const spendToken = testToken

func newSpendEnv(t testing.TB, e env, now time.Time) *spendEnv {
	t.Helper()
	return newSpendEnvOn(t, e, now, pgtest.Database(t))
}

// newGatedSpendEnv is a spendEnv whose service and worker reach the
// ledger through a gate the test can cut.
func newGatedSpendEnv(t testing.TB, e env, now time.Time) (*spendEnv, *pgtest.Gate) {
	t.Helper()
	url, gate := pgtest.Gated(t, pgtest.Database(t))
	return newSpendEnvOn(t, e, now, url), gate
}

func newSpendEnvOn(t testing.TB, e env, now time.Time, url string) *spendEnv {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = ledger.Migrate(ctx, pool)
	require.NoError(t, err)
	led := &countingLedger{Ledger: ledger.New(pool)}
	clk := &clock{t: now}
	cache := spendcache.New(e.c, led, spendcache.Options{Now: clk.Now})
	store := NewBuckets(e.c, Options{Spend: cache})
	h := New(Config{Buckets: store, Token: spendToken, Ledger: led.Ledger, Registry: prometheus.NewRegistry()})
	srv := serve(t, h)
	w := spendworker.New(led.Ledger, cache, spendworker.Options{Now: clk.Now})
	return &spendEnv{env: e, clock: clk, led: led, pool: pool, dbURL: url, cache: cache, store: store, srv: h, http: srv, worker: w}
}

func utc(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

func usdAmount(t *testing.T, s string) money.Amount {
	t.Helper()
	a, err := money.Parse(s)
	require.NoError(t, err)
	return a
}

// spender is one request's identity and the filter's configured limits.
type spender struct {
	team, key, user string
	limits          map[spend.Slot]string // USD
}

func (c spender) spendAt(t *testing.T, start time.Time) limit.Spend {
	t.Helper()
	day, month, ok := calendar.Both(start.UnixNano())
	require.True(t, ok)
	sp := limit.Spend{Day: day, Month: month, Start: start.UnixNano(), Model: "m",
		Policy: spend.Policy{Team: c.team, APIKey: c.key, User: c.user}}
	for s, usd := range c.limits {
		sp.Policy.Limits[s] = spend.Limit{Amount: usdAmount(t, usd), Set: true}
	}
	return sp
}

func newHoldID() string { return randomHoldID() }

// admitted is what the filter reads from an admission's answer.
type admitted struct {
	status int
	resp   wire.AdmitResponse
	out    limit.Outcome
	err    error // SpendOutcome's: ErrSpendUnavailable when unchecked
	hold   string
}

func (se *spendEnv) post(t *testing.T, path string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, se.http.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+spendToken)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, res.Header, b.Bytes()
}

// admit sends a plan of one token op (ample) with sp over HTTP, as the
// filter's remote store does.
func (se *spendEnv) admit(t *testing.T, sp limit.Spend) admitted {
	t.Helper()
	id := newHoldID()
	p := limit.Plan{Tokens: []limit.Op{tokOp(uniq("tok"), "api_key", 10, minute(1_000_000))}, Spend: sp}
	status, _, body := se.post(t, wire.PathAdmit, wire.AppendAdmitHold(nil, p, id))
	a := admitted{status: status, hold: id}
	if status != http.StatusOK {
		return a
	}
	r, err := wire.DecodeAdmitResponse(body)
	require.NoError(t, err, string(body))
	a.resp, a.out = r, r.Outcome()
	a.err = r.SpendOutcome(&a.out, &p.Spend)
	return a
}

// settle sends the settlement of hold with its inference record, costing
// estimate (USD) for the given usage.
func (se *spendEnv) settle(t *testing.T, hold string, sp limit.Spend, estimate string, k tokens.Kinds) (int, http.Header) {
	t.Helper()
	h := limit.Hold{ID: hold, Spend: sp, SpendCost: usdAmount(t, estimate), SpendUsage: k}
	status, hdr, _ := se.post(t, wire.PathSettle, wire.AppendSettleRecord(nil, hold, 10, nil, wire.RecordOf(h)))
	return status, hdr
}

// spent admits and settles one call, requiring both to succeed.
func (se *spendEnv) spent(t *testing.T, c spender, start time.Time, estimate string, k tokens.Kinds) {
	t.Helper()
	sp := c.spendAt(t, start)
	a := se.admit(t, sp)
	require.Equal(t, http.StatusOK, a.status)
	require.NoError(t, a.err)
	require.True(t, a.out.Admitted(), "admission of a call that should have room: %+v", a.resp.Spend)
	st, _ := se.settle(t, a.hold, sp, estimate, k)
	require.Equal(t, http.StatusOK, st)
}

// counter reads a cached usage key; ok false when absent.
func (se *spendEnv) counter(t *testing.T, team string, s spend.Slot, id string, w calendar.Window) (money.Amount, bool) {
	t.Helper()
	return se.readInt(t, spendcache.UsageKey(spendcache.TeamOf(team), s.Scope(), id, s.Period(), w.Key))
}

func (se *spendEnv) readInt(t *testing.T, key string) (money.Amount, bool) {
	t.Helper()
	v, err := se.c.Get(context.Background(), key).Int64()
	if err == redis.Nil {
		return 0, false
	}
	require.NoError(t, err)
	return money.Amount(v), true
}

// prices stores one flat list: input and output at the given USD per
// million tokens.
func (se *spendEnv) prices(t *testing.T, from time.Time, input, output string) {
	t.Helper()
	in, err := money.ParsePrice(input)
	require.NoError(t, err)
	out, err := money.ParsePrice(output)
	require.NoError(t, err)
	e := pricing.Entry{Base: pricing.Rates{Input: in, CachedInput: in, CacheWrite: in, CacheWrite1h: in, Output: out}}
	_, err = se.led.PutPrices(context.Background(), from, map[string]pricing.Entry{"m": e}, nil)
	require.NoError(t, err)
}

// runWorker runs the worker once and requires it to succeed.
func (se *spendEnv) runWorker(t *testing.T) spendworker.Stats {
	t.Helper()
	st, err := se.worker.RunOnce(context.Background())
	require.NoError(t, err)
	return st
}

// invalidate deletes a team's cached policy, usage and balance, as the
// admin API does after a change.
func (se *spendEnv) invalidate(t *testing.T, team string) {
	t.Helper()
	ctx := context.Background()
	team = spendcache.TeamOf(team)
	keys := []string{spendcache.PolicyKey(team), spendcache.BalanceKey(team)}
	scan := func(c *redis.Client) {
		it := c.Scan(ctx, 0, spendcache.UsagePattern(team), 100).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		require.NoError(t, it.Err())
	}
	switch c := se.c.(type) {
	case *redis.ClusterClient:
		require.NoError(t, c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { scan(n); return nil }))
	case *redis.Client:
		scan(c)
	}
	for _, k := range keys {
		require.NoError(t, se.c.Del(ctx, k).Err())
	}
}

// aggregate is the ledger's confirmed figure of one scope and period.
func (se *spendEnv) aggregate(t *testing.T, team string, scope spend.Scope, id string, w calendar.Window) money.Amount {
	t.Helper()
	figs, err := se.led.Aggregates(context.Background(), spendcache.TeamOf(team), w.KeyString())
	require.NoError(t, err)
	for _, f := range figs {
		if f.Scope == scope && f.ID == id {
			return f.Amount
		}
	}
	return 0
}

// pgDown makes the test's database refuse every connection (and drops the
// open ones), like a database that went away; the returned func brings it
// back.
func pgDown(t *testing.T, se *spendEnv) (up func()) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	require.NoError(t, err)
	name := strings.TrimPrefix(strings.SplitN(se.dbURL[strings.LastIndex(se.dbURL, "/"):], "?", 2)[0], "/")
	_, err = admin.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS false")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = $1", name)
	require.NoError(t, err)
	se.pool.Reset()
	return func() {
		_, err := admin.Exec(ctx, "ALTER DATABASE "+name+" ALLOW_CONNECTIONS true")
		require.NoError(t, err)
		_ = admin.Close(ctx)
	}
}
