package server

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

// roundTrips counts commands and pipelines sent to Redis: each is one round
// trip on the wire.
type roundTrips struct{ n atomic.Int64 }

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "hello" && cmd.Name() != "client" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

type env struct {
	name  string
	store *Buckets
	c     redis.UniversalClient
	rt    *roundTrips
}

// The package's standalone Redis and 3-node cluster start on first use and
// stay until TestMain exits. A run that needs neither starts none: a fuzz
// worker of a pure decoder runs TestMain too, and starting four servers
// there cost time and, before they died with their parent, hung the fuzz
// coordinator on the pipes they inherited.
var (
	servers      sync.Once
	serversTB    = &mainTB{}
	singleAddr   string
	clusterAddrs []string
)

func redisServers(t testing.TB) (single string, cluster []string) {
	t.Helper()
	// Missing tools are the calling test's to report, as redistest reports
	// them: a skip locally, a failure under CI=true.
	redistest.RequireBinary(t, "redis-server")
	redistest.RequireBinary(t, "redis-cli")
	servers.Do(func() {
		defer func() { _ = recover() }() // mainTB's Fatal panics
		singleAddr = redistest.Start(serversTB)
		clusterAddrs = redistest.StartCluster(serversTB, 3)
	})
	if serversTB.failed || serversTB.skipped != "" {
		t.Fatal("the package's Redis servers did not start; the first test's output says why")
	}
	return singleAddr, clusterAddrs
}

// envs returns one store on a standalone Redis and one on a 3-node
// cluster, each test package starting its own servers once.
func envs(t *testing.T) []env {
	t.Helper()
	return []env{newEnv(t, false), newEnv(t, true)}
}

func newEnv(t testing.TB, cluster bool) env {
	t.Helper()
	single, clusterNodes := redisServers(t)
	ctx := context.Background()
	rt := &roundTrips{}
	var c redis.UniversalClient
	name := "single"
	if cluster {
		name = "cluster"
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterNodes})
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(rt) })
		c = cc
	} else {
		cl := redis.NewClient(&redis.Options{Addr: single})
		cl.AddHook(rt)
		c = cl
	}
	t.Cleanup(func() { _ = c.Close() })
	s := NewBuckets(c, Options{})
	require.NoError(t, s.Load(ctx))
	rt.n.Store(0)
	return env{name: name, store: s, c: c, rt: rt}
}

func TestMain(m *testing.M) {
	code := m.Run()
	serversTB.cleanup()
	exit(code)
}

var keySeq atomic.Int64

// uniq makes a fresh op key so tests never share buckets.
func uniq(prefix string) string { return prefix + ":" + strconv.FormatInt(keySeq.Add(1), 10) }

// dimension is the named dimension; the helpers take names for brevity.
func dimension(name string) limit.Dimension {
	d, ok := limit.ParseDimension(name)
	if !ok {
		panic("no dimension " + name)
	}
	return d
}

func tokOp(key, dim string, amount int64, limits ...limit.Limit) limit.Op {
	return limit.Op{Key: key, Kind: limit.KindTokens, Dimension: dimension(dim), Amount: amount, Limits: limits}
}

func reqOp(key, dim string, limits ...limit.Limit) limit.Op {
	return limit.Op{Key: key, Kind: limit.KindRequests, Dimension: dimension(dim), Amount: 1, Limits: limits}
}

func concOp(key, dim string, capacity int64) limit.Op {
	return limit.Op{Key: key, Kind: limit.KindConcurrency, Dimension: dimension(dim), Amount: 1,
		Limits: []limit.Limit{{Budget: limit.PeriodConcurrent, Capacity: capacity}}}
}

// slow limits refill so little during a test that levels compare to 0.5.
func minute(capacity int64) limit.Limit {
	return limit.Limit{Budget: limit.PeriodMinute, Capacity: capacity, RefillPerSec: 0.001}
}
func day(capacity int64) limit.Limit {
	return limit.Limit{Budget: limit.PeriodDay, Capacity: capacity, RefillPerSec: 0.0001}
}

// level reads one period of a bucket; an absent bucket is full.
func level(t *testing.T, e env, opKey string, l limit.Limit) float64 {
	t.Helper()
	v, err := e.c.Get(context.Background(), bucketKey(opKey)).Result()
	if err == redis.Nil {
		return float64(l.Capacity)
	}
	require.NoError(t, err)
	b, err := DecodeBucket(v)
	require.NoError(t, err)
	st, ok := b[l.Budget]
	if !ok {
		return float64(l.Capacity)
	}
	return st.Level
}

func admit(t *testing.T, e env, p limit.Plan) limit.Outcome {
	t.Helper()
	o, err := e.store.Admit(context.Background(), p)
	require.NoError(t, err)
	return o
}
