package wasmtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

func secs(n int64) time.Duration { return time.Duration(n) * time.Second }

func TestABadConfigIsRefusedWithAClearLogLine(t *testing.T) {
	cases := map[string]string{
		"unknown field":  `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minuet":5}}}}`,
		"negative value": `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":-5}}}}`,
		"not json":       `{"rate_limiting":`,
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			var logs []string
			_, err := host.New(context.Background(), host.Options{
				Module: wasmbuild.Filter(t), PluginConfig: []byte(cfg), Workers: 1, Profile: envProfile(t),
				Log: func(_ host.Level, m string) { logs = append(logs, m) },
			})
			require.Error(t, err, "the canary VM must reject the config")
			require.Contains(t, strings.Join(logs, "\n"), "plugin config rejected")
		})
	}
}

func TestARejectedConfigIsLoggedOneLinePerErrorAsTbconfigPrintsThem(t *testing.T) {
	cfg := `{"rate_limiting":{"storage":"etcd","limits":{"per_api_key":{"tokens_per_minut":5}}}}`
	var logs []string
	_, err := host.New(context.Background(), host.Options{
		Module: wasmbuild.Filter(t), PluginConfig: []byte(cfg), Workers: 1, Profile: envProfile(t),
		Log: func(l host.Level, m string) {
			if l >= host.LevelError && strings.Contains(m, "plugin config rejected") {
				logs = append(logs, m)
			}
		},
	})
	require.Error(t, err)
	want := []string{
		`tokenbudget: plugin config rejected: error: parse plugin config: rate_limiting.limits.per_api_key: unknown field "tokens_per_minut" (did you mean "tokens_per_minute"?)`,
		`tokenbudget: plugin config rejected: error: invalid plugin config: rate_limiting.storage: must be "memory" or "redis", not "etcd"`,
	}
	require.Equal(t, want, logs, "the lines `tbconfig validate` prints, one entry each")
	for _, l := range logs {
		require.NotContains(t, l, "\n", "one error per entry")
	}
}

func TestReloadResetsBucketsExactlyWhenABudgetChanged(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	r := x.do(call{key: "sk-a", body: chatBody("hello", 3000), chunks: []string{chatResponse(3000, 0)}})
	require.Equal(t, 200, r.status)
	spent := int64(3000)

	// Same budgets (a warning-level change only): the level is kept.
	require.NoError(t, x.h.Reload(context.Background(), []byte(keyBudgetConfig)))
	r = x.do(call{key: "sk-a", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 10000-spent-reservedBy2(t, r, 10000), atoi(t, r.header("x-ratelimit-tokens-remaining")))

	// A changed minute budget: a fresh window under the new number.
	changed := strings.Replace(keyBudgetConfig, "10000", "20000", 1)
	require.NoError(t, x.h.Reload(context.Background(), []byte(changed)))
	r = x.do(call{key: "sk-a", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, "20000", r.header("x-ratelimit-tokens-limit"))
	require.Equal(t, 20000-reservedBy2(t, r, 20000), atoi(t, r.header("x-ratelimit-tokens-remaining")))
}

// reservedBy2 is what a request of chatBody("hello", 10) reserves; it is the
// same on every bucket, so learn it on a fresh key.
func reservedBy2(t testing.TB, _ reply, _ int64) int64 {
	t.Helper()
	x := newHarness(t, keyBudgetConfig)
	r := x.do(call{key: "sk-fresh", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	// The next call's harness (same vm_id, so the same shared data) reads
	// sk-fresh again: the refund reaches shared data on the tick.
	x.h.Tick()
	return reservedBy(t, r)
}

func TestAFailedReloadKeepsTheOldConfigRunning(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	require.Error(t, x.h.Reload(context.Background(), []byte(`{"rate_limiting":{"storage":"floppy"}}`)))
	r := x.do(call{key: "sk-a", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, "10000", r.header("x-ratelimit-tokens-limit"))
}

func TestTheFilterNeverCallsPollOneoffOnTheLegacyProfile(t *testing.T) {
	x := newHarness(t, keyBudgetConfig, withProfile(host.ProfileLegacy))
	for i := 0; i < 300; i++ {
		x.do(call{key: "sk-a", body: chatBody(strings.Repeat("word ", i), 10), chunks: []string{chatResponse(1, 1)}})
		x.clock.Advance(time.Second)
	}
	require.Zero(t, x.h.PollOneoffCalls())
}
