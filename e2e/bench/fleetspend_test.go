package bench

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/e2e/bench/internal/callgrind"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
	spendledger "github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// fleetSpendConfig is a fleet config of two token dimensions and a price
// list; key sk-free's team has no limit anywhere. spendPart is "" (the
// default: the spend part rides with every request) or `,"fleet_spend":false`.
func fleetSpendConfig(spendPart string) string {
	return `{"rate_limiting":{"storage":"redis","limits":{` +
		`"global":{"tokens_per_minute":1000000000000,"tokens_per_day":1000000000000},` +
		`"per_api_key":{"tokens_per_minute":1000000000000,"tokens_per_day":1000000000000}},` +
		`"redis":{"cluster":"sharedstore","token":"bench-token","timeout_ms":2000,"fallback_to_memory":false` + spendPart + `}},` +
		`"pricing":{"default":{"input":"2.50","output":"10"}},` +
		`"api_keys":[{"key":"sk-free","id":"kf","team":"free"}]}`
}

// TestFleetSpendByDefaultCostPerAdmission measures what the default spend
// part costs one request of a team with no limit, against fleet_spend false,
// in one process: two gateways on the compiled filter (one per config), one
// sharedstore with the spend cache and the PostgreSQL ledger, one Redis.
// Natively it logs the Redis commands and ledger records per request
// (INFO commandstats, a count of the ledger's rows); under callgrind
// (`make bench-fleet-spend`) each mode's N requests are one dump, so the
// dump's totals ÷ N are the instructions of the Go side per request
// (gateway, filter, sharedstore, clients; not redis-server nor PostgreSQL).
func TestFleetSpendByDefaultCostPerAdmission(t *testing.T) {
	n := 50
	if s := os.Getenv(envInstructionRequests); s != "" {
		v, err := strconv.Atoi(s)
		require.NoError(t, err)
		n = v
	}
	ctx := context.Background()
	addr := redistest.Start(t)
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = spendledger.Migrate(ctx, pool)
	require.NoError(t, err)
	led := spendledger.New(pool)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	var trips roundTrips
	rdb.AddHook(&trips)
	info := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = info.Close() })
	cache := spendcache.New(rdb, led, spendcache.Options{})
	h := server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{Spend: cache}), Token: "bench-token",
		Registry: prometheus.NewRegistry(), Ledger: led})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	front := server.NewFront(ln, h, 10*time.Second)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = front.Serve() }()
	go func() { _ = srv.Serve(front) }()
	t.Cleanup(func() {
		_ = srv.Close()
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = front.Shutdown(c)
	})
	store := "http://" + ln.Addr().String()

	gw := func(config string) *gateway.Gateway {
		g, err := gateway.New(gateway.Config{Module: wasmbuild.Filter(t), PluginConfig: []byte(config),
			Listen: "127.0.0.1:0", Admin: "127.0.0.1:0", Workers: 1, UpstreamHandler: mockllm.New(mockllm.Options{}),
			Clusters: map[string]string{"sharedstore": store}, CacheDir: os.Getenv(envWasmCache)})
		require.NoError(t, err)
		require.NoError(t, g.Start())
		t.Cleanup(func() { _ = g.Close() })
		return g
	}
	modes := []struct {
		name string
		g    *gateway.Gateway
	}{{"fleet-spend-off", gw(fleetSpendConfig(`,"fleet_spend":false`))}, {"fleet-spend-default", gw(fleetSpendConfig(""))}}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	t.Cleanup(client.CloseIdleConnections)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"measure one admission"}],"max_tokens":16}`
	send := func(g *gateway.Gateway) {
		req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("authorization", "Bearer sk-free")
		req.Header.Set("x-mock-output-tokens", "8")
		res, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		require.NoError(t, res.Body.Close())
		require.Equal(t, 200, res.StatusCode)
	}
	// A record is in the ledger, or in the team's outbox when an insert
	// outran the ledger's timeout (a loaded machine): either way once.
	records := func() int64 {
		var c int64
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM inference_records`).Scan(&c))
		kept, err := cache.OutboxLen(ctx, "free")
		require.NoError(t, err)
		return c + kept
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, m := range modes {
		for range 20 { // warm the VM, the connections, the buckets and the team's spend cache
			send(m.g)
		}
		settled(t, info)
		cmds, recs, sent := redisCommands(t, info), records(), trips.n.Load()
		callgrind.Count(m.name, func() {
			for range n {
				send(m.g)
			}
		})
		settled(t, info)
		sent = trips.n.Load() - sent
		after := redisCommands(t, info)
		var parts []string
		total := int64(0)
		for name, c := range after {
			if d := c - cmds[name]; d > 0 {
				total += d
				parts = append(parts, name+" "+strconv.FormatFloat(float64(d)/float64(n), 'f', 2, 64))
			}
		}
		// What the modes differ in: the default records every request in
		// the ledger, the opt-out none.
		want := int64(0)
		if m.name == "fleet-spend-default" {
			want = int64(n)
		}
		require.Equal(t, want, records()-recs, "%s: ledger records", m.name)
		sort.Strings(parts)
		t.Logf("%s: %.2f round trips to Redis per request, %.2f commands run by Redis (scripts' included: %s), %.2f ledger records",
			m.name, float64(sent)/float64(n), float64(total)/float64(n), strings.Join(parts, ", "), float64(want)/float64(n))
	}
}

// roundTrips counts what sharedstore sends to Redis: one per command, one
// per pipeline; the test's own INFO calls go on their own client.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// redisCommands is Redis's count of calls by command (INFO commandstats),
// less the INFO calls themselves.
func redisCommands(t testing.TB, rdb *redis.Client) map[string]int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	out := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok || name == "info" {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		require.NoError(t, err)
		out[name] = v
	}
	return out
}

// settled waits until Redis has seen no command for 200 ms: every
// asynchronous settlement of the requests sent has landed.
func settled(t testing.TB, rdb *redis.Client) {
	t.Helper()
	total := func() (s int64) {
		for _, v := range redisCommands(t, rdb) {
			s += v
		}
		return s
	}
	last := total()
	for range 100 {
		time.Sleep(200 * time.Millisecond)
		if now := total(); now == last {
			return
		} else {
			last = now
		}
	}
	t.Fatal("Redis never went quiet")
}
