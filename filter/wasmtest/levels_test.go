package wasmtest

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// The gauge rate_limit_tokens_remaining reports, on the tick, the level of
// the global bucket and of each configured model's, read from shared data
// by whichever worker ticks; the per-key bucket, a tenant's, is never a
// series.
func TestTheTokensRemainingGaugeReportsTheBucketsNoTenantOwnsOnTheTick(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{
		"global":{"tokens_per_minute":100000,"tokens_per_day":5000000},
		"per_api_key":{"tokens_per_minute":20000},
		"per_model":{"gpt-4o":{"tokens_per_minute":50000},"gpt-4o-mini":{"tokens_per_day":900000}}},
		"budget_division":{"replicas":1}}}`, withWorkers(2))
	gauge := func(pairs ...string) (int64, bool) {
		v, ok := x.h.Metric(metrics.Name(metrics.TokensRemaining, pairs...))
		return int64(v), ok
	}
	x.h.Tick()
	v, ok := gauge(metrics.LabelBucketType, "global_minute")
	require.True(t, ok, "written on the first tick, before any request")
	require.Equal(t, int64(100000), v)

	r := x.doOn(0, call{key: "sk-gauge", body: chatBody("hello", 3000), chunks: []string{chatResponse(10, 990)}})
	require.Equal(t, 200, r.status)
	x.h.Tick()
	for _, c := range []struct {
		pairs []string
		want  int64
	}{
		{[]string{metrics.LabelBucketType, "global_minute"}, 99000},
		{[]string{metrics.LabelBucketType, "global_day"}, 4999000},
		{[]string{metrics.LabelBucketType, "per_model_minute", metrics.LabelModel, "gpt-4o"}, 49000},
		{[]string{metrics.LabelBucketType, "per_model_day", metrics.LabelModel, "gpt-4o-mini"}, 900000},
	} {
		v, ok := gauge(c.pairs...)
		require.True(t, ok, "%v", c.pairs)
		require.Equal(t, c.want, v, "%v: settled at 1000 tokens", c.pairs)
	}
	for _, absent := range [][]string{
		{metrics.LabelBucketType, "per_model_day", metrics.LabelModel, "gpt-4o"},         // no day budget
		{metrics.LabelBucketType, "per_model_minute", metrics.LabelModel, "gpt-4o-mini"}, // no minute budget
	} {
		_, ok := gauge(absent...)
		require.False(t, ok, "%v", absent)
	}
	text := x.h.PrometheusText()
	require.Contains(t, text, metrics.TokensRemaining)
	require.NotContains(t, text, `bucket_type="per_api_key`, "a tenant's bucket is never a series")
	require.NotContains(t, text, "sk-gauge")
}

// Under storage "redis" the gauge is the shared level every replica sees:
// the tick reads it from sharedstore (POST /v1/levels), so two replicas of
// one fleet report the same figure, the spend of both.
func TestUnderRedisTheTokensRemainingGaugeIsTheSharedLevelEveryReplicaSees(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	srv := httptest.NewServer(server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{}), Token: "tok"}))
	t.Cleanup(srv.Close)
	// 86,400 a day refills one token a second: the level read stays within
	// the test's seconds of what was settled.
	cfg := `{"rate_limiting":{"storage":"redis","redis":{"cluster":"sharedstore","token":"tok","timeout_ms":2000},
		"limits":{"global":{"tokens_per_day":86400},"per_model":{"gpt-4o":{"tokens_per_day":172800}}}}}`
	a := newHarness(t, cfg, withClusters(map[string]string{"sharedstore": srv.URL}))
	b := newHarness(t, cfg, withClusters(map[string]string{"sharedstore": srv.URL}))
	for _, x := range []*harness{a, b} {
		r := x.do(call{key: "sk-gauge", body: chatBody("hello", 1000), chunks: []string{chatResponse(10, 990)}})
		require.Equal(t, 200, r.status)
	}
	start := time.Now()
	for _, x := range []*harness{a, b} {
		for _, c := range []struct {
			pairs     []string
			settled   int64
			perSecond int64
		}{
			{[]string{metrics.LabelBucketType, "global_day"}, 86400 - 2000, 1},
			{[]string{metrics.LabelBucketType, "per_model_day", metrics.LabelModel, "gpt-4o"}, 172800 - 2000, 2},
		} {
			name := metrics.Name(metrics.TokensRemaining, c.pairs...)
			var got int64
			within := func() bool {
				v, ok := x.h.Metric(name)
				got = v
				slack := c.perSecond * (int64(time.Since(start).Seconds()) + 2)
				return ok && v >= c.settled && v <= c.settled+slack
			}
			for i := 0; i < 200 && !within(); i++ {
				x.h.Tick() // the store is asked every tenth tick, once the settlements landed
				time.Sleep(20 * time.Millisecond)
			}
			require.True(t, within(), "%s = %d, want the fleet's level after both settlements, %d", name, got, c.settled)
		}
	}
	require.NotContains(t, a.h.PrometheusText(), `bucket_type="per_api_key`)
}
