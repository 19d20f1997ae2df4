package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// fleetToken is the bearer token every replica in these tests expects.
const fleetToken = "fleet-test-token"

// withClusters points the filter's proxy_http_call clusters at URLs.
func withClusters(c map[string]string) gwOpt {
	return func(g *gateway.Config) { g.Clusters = c }
}

// fleetConfig is a storage "redis" plugin config calling cluster
// "sharedstore"; limits is the JSON of rate_limiting.limits.
func fleetConfig(limits, token string, timeoutMs int, fallback bool) string {
	return `{"rate_limiting":{"storage":"redis","limits":` + limits + `,"redis":{"cluster":"sharedstore","authority":"sharedstore","token":"` +
		token + `","timeout_ms":` + strconv.Itoa(timeoutMs) + `,"fallback_to_memory":` + strconv.FormatBool(fallback) + `}}}`
}

// replica is one in-process sharedstore service on a loopback port that
// can be stopped and started again on the same address (a replica
// restart), or made slow (every /v1 call sleeps before it is served).
type replica struct {
	t    testing.TB
	addr string
	h    http.Handler
	reg  *prometheus.Registry
	rdb  *redis.Client
	slow atomic.Int64 // ns each /v1 call waits before it runs; 0 = none
	// lateReply is ns each /v1 call's answer waits after it ran; 0 = none.
	lateReply atomic.Int64
	mu        sync.Mutex
	srv       *http.Server
	srvWG     sync.WaitGroup
}

func startReplica(t testing.TB, redisAddr string) *replica {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	t.Cleanup(func() { _ = rdb.Close() })
	store := server.NewBuckets(rdb, server.Options{})
	reg := prometheus.NewRegistry()
	r := &replica{t: t, rdb: rdb, reg: reg}
	r.h = server.New(server.Config{Buckets: store, Token: fleetToken, Registry: reg, RedisTimeout: 2 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r.addr = ln.Addr().String()
	r.serve(ln)
	t.Cleanup(r.Stop)
	return r
}

func (r *replica) URL() string { return "http://" + r.addr }

// ServeHTTP applies the injected slowness. slow: the call waits after its
// body arrived (so the server notices a caller that gave up, as it does
// when Redis is slow to accept the command) and then runs. lateReply: the
// call runs to completion in Redis, and only its answer is late (a reply
// lost after the commit).
func (r *replica) ServeHTTP(w http.ResponseWriter, q *http.Request) {
	v1 := strings.HasPrefix(q.URL.Path, "/v1/")
	if d := time.Duration(r.lateReply.Load()); d > 0 && v1 {
		rec := httptest.NewRecorder()
		r.h.ServeHTTP(rec, q)
		time.Sleep(d)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
		return
	}
	if d := time.Duration(r.slow.Load()); d > 0 && v1 {
		body, err := io.ReadAll(q.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(d):
		case <-q.Context().Done():
		}
		q.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.h.ServeHTTP(w, q)
}

func (r *replica) serve(ln net.Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	srv := r.srv
	r.srvWG.Add(1)
	go func() { defer r.srvWG.Done(); _ = srv.Serve(ln) }()
}

// Stop closes the listener and every connection: callouts now fail to
// connect, as with a replica that went away.
func (r *replica) Stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	r.srvWG.Wait()
}

// Restart serves again on the same address.
func (r *replica) Restart() {
	r.t.Helper()
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port was just ours; rebinding it can race the close briefly
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(r.t, err, "rebind replica on %s", r.addr)
	r.serve(ln)
}

// ends is how many settle and release calls this replica answered with
// the hold ended now (not already ended).
func (r *replica) ends() int {
	return int(counterSum(r.t, r.reg, "tokenbudget_sharedstore_requests_total", map[string]string{"outcome": "ended"}))
}

// admitted is how many admissions this replica granted.
func (r *replica) admitted() int {
	return int(counterSum(r.t, r.reg, "tokenbudget_sharedstore_requests_total", map[string]string{"operation": "admit", "outcome": "admitted"}))
}

func counterSum(t testing.TB, reg *prometheus.Registry, name string, match map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := match[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// waitFor polls cond every 20 ms for at most d; it reports whether cond
// became true. Used only to wait for asynchronous settlements to land.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitEnds waits until the replicas together ended n holds. A settlement
// retried after an outage comes with the remote store's backoff, up to 8 s
// after the last failure, on the root's tick: the wait leaves room for that
// on a loaded machine (a CI run beside two callgrind runs once took longer
// than 15 s), and returns as soon as the holds are ended.
func waitEnds(t testing.TB, n int, rs ...*replica) {
	t.Helper()
	got := 0
	ok := waitFor(30*time.Second, func() bool {
		got = 0
		for _, r := range rs {
			got += r.ends()
		}
		return got >= n
	})
	require.True(t, ok, "replicas ended %d holds, want %d", got, n)
	require.Equal(t, n, got, "no hold ends twice")
}

// bucketState is one period of a Redis bucket hash.
type bucketState struct {
	level  float64
	lastUs int64
	exists bool
}

// readBucket reads the token bucket of one dimension and identity ("" for
// global, the raw API key for api_key) from Redis: one period of the string
// at tb:b:{tb|t|<dim>|<version>|<identity>} (docs/redis-layout.md). An
// absent bucket is full.
func readBucket(t testing.TB, rdb *redis.Client, dim, ident, budget string) bucketState {
	t.Helper()
	if dim == "api_key" {
		ident = identity.HashKey(ident)
	}
	ctx := context.Background()
	var keys []string
	iter := rdb.Scan(ctx, 0, "tb:b:{tb|t|"+dim+"|*", 1000).Iterator()
	for iter.Next(ctx) {
		if strings.HasSuffix(iter.Val(), "|"+ident+"}") {
			keys = append(keys, iter.Val())
		}
	}
	require.NoError(t, iter.Err())
	require.LessOrEqual(t, len(keys), 1, "one bucket per dimension and identity: %v", keys)
	if len(keys) == 0 {
		return bucketState{}
	}
	v, err := rdb.Get(ctx, keys[0]).Result()
	if err == redis.Nil {
		return bucketState{}
	}
	require.NoError(t, err)
	b, err := server.DecodeBucket(v)
	require.NoError(t, err)
	p, ok := limit.ParsePeriod(budget)
	require.True(t, ok, budget)
	st, ok := b[p]
	if !ok {
		return bucketState{}
	}
	return bucketState{level: st.Level, lastUs: st.LastUs, exists: true}
}

// promValue reads one series from the gateway's /stats/prometheus; absent
// is 0 (a counter never incremented is never defined).
func promValue(t testing.TB, g *gateway.Gateway, series string) int64 {
	t.Helper()
	g.Host().Tick() // the filter hands its counters to the proxy on its tick
	res, err := http.Get("http://" + g.AdminAddr() + "/stats/prometheus")
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, series+" ") {
			n, err := strconv.ParseInt(strings.TrimSpace(line[len(series)+1:]), 10, 64)
			require.NoError(t, err, line)
			return n
		}
	}
	return 0
}

// redisServer is a redis-server the test can stop and start again on the
// same port and data directory (redistest kills its servers only at
// cleanup). AOF with fsync on every write keeps the buckets and hold
// records across the restart, as a production Redis with persistence does.
type redisServer struct {
	t      testing.TB
	bin    string
	dir    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
}

func startRedisServer(t testing.TB) *redisServer {
	t.Helper()
	bin := redistest.RequireBinary(t, "redis-server")
	s := &redisServer{t: t, bin: bin, dir: t.TempDir()}
	for attempt := 0; attempt < 5; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s.port = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if s.launch() {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatal("redis-server did not start after 5 attempts")
	return nil
}

func (s *redisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *redisServer) launch() bool {
	s.t.Helper()
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--dir", s.dir, "--daemonize", "no", "--loglevel", "warning")
	logf, err := os.OpenFile(filepath.Join(s.dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	redistest.DieWithParent(cmd)
	require.NoError(s.t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = logf.Close(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.cmd = nil
			return false
		default:
		}
		if ping(s.Addr()) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("redis-server on %s never answered PING", s.Addr())
	return false
}

// Stop ends the server with SIGINT (a clean shutdown) and waits for it.
func (s *redisServer) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt) // redis-server shuts down cleanly on SIGINT
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and data directory.
func (s *redisServer) Restart() {
	s.t.Helper()
	for i := 0; i < 20; i++ {
		if s.launch() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("redis-server did not restart on %s", s.Addr())
}

func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "*1\r\n$4\r\nPING\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "+PONG")
}
