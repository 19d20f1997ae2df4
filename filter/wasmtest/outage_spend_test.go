package wasmtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// spendOutageConfig: the fleet store with fallback_to_memory; key sk-a has
// a $0.01 daily limit, gpt-4o is priced at $2.50 / $10 per million, so
// chatBody(..., 300) may cost just over $0.003.
const spendOutageConfig = `{
  "rate_limiting": {"storage": "redis", "redis": {"cluster": "sharedstore", "token": "tok", "timeout_ms": 2000, "fallback_to_memory": true},
    "limits": {"per_api_key": {"tokens_per_minute": 1000000}}},
  "pricing": {"gpt-4o": {"input": "2.50", "output": "10.00"}},
  "api_keys": [{"key": "sk-a", "id": "a", "team": "eng", "spend_limit_day_usd": "0.01"}]
}`

// spendFleet is a sharedstore with its spend cache and ledger, behind a
// switch that answers 503 while down.
type spendFleet struct {
	down atomic.Bool
	pool *pgxpool.Pool
}

func startSpendFleet(t *testing.T) (*spendFleet, string) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = ledger.Migrate(ctx, pool)
	require.NoError(t, err)
	led := ledger.New(pool)
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	cache := spendcache.New(rdb, led, spendcache.Options{})
	h := server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{Spend: cache}), Token: "tok", Ledger: led})
	f := &spendFleet{pool: pool}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *spendFleet) records(t *testing.T) (n int) {
	require.NoError(t, f.pool.QueryRow(context.Background(), "SELECT count(*) FROM inference_records").Scan(&n))
	return n
}

// In the compiled module, a store outage keeps the key's spend where the
// fleet left it: what the last verdict found exhausted is refused, what
// remained is reserved against, and the record of each fallback
// admission reaches the ledger once the store answers again.
func TestAStoreOutageKeepsTheFleetsSpendVerdict(t *testing.T) {
	f, url := startSpendFleet(t)
	x := newHarness(t, spendOutageConfig, withClusters(map[string]string{"sharedstore": url}))
	spendCall := func(maxTokens, completion int) int {
		return x.do(call{key: "sk-a", body: chatBody("hello", maxTokens), chunks: []string{chatResponse(5, completion)}}).status
	}
	// Up: $0.003 three times leaves just under $0.001.
	for i := 0; i < 3; i++ {
		require.Equal(t, 200, spendCall(300, 300))
	}
	require.Eventually(t, func() bool { x.h.Tick(); return f.records(t) == 3 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 429, spendCall(300, 300), "the fleet refuses a fourth $0.003")

	f.down.Store(true)
	require.Equal(t, 429, spendCall(300, 300), "in the outage too: the last verdict left under $0.001")
	// $0.0004 calls: two fit what remained, a third no longer does
	require.Equal(t, 200, spendCall(40, 40), "a call that fits what remained is admitted")
	require.Equal(t, 200, spendCall(40, 40))
	require.Equal(t, 429, spendCall(40, 40), "what remained is reserved against, not restarted from $0")

	f.down.Store(false)
	require.Eventually(t, func() bool { x.h.Tick(); return f.records(t) == 5 }, 20*time.Second, 50*time.Millisecond,
		"the fallback admissions' records reach the ledger")
}
