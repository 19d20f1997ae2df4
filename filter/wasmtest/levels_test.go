package wasmtest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
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

// Under storage "redis" shared data holds only the fallback buckets, not the
// level every replica sees, so the gauge is not written from it.
func TestTheTokensRemainingGaugeIsNotWrittenFromTheFallbackBuckets(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"storage":"redis","redis":{"cluster":"sharedstore"},
		"limits":{"global":{"tokens_per_minute":100000}}}}`)
	x.h.Tick()
	_, ok := x.h.Metric(metrics.Name(metrics.TokensRemaining, metrics.LabelBucketType, "global_minute"))
	require.False(t, ok)
}
