package wasmtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

const fullMapConfig = `{
  "rate_limiting": {
    "max_buckets": %MAX% %OPTION%,
    "limits": { "per_api_key": { "tokens_per_minute": 5000 } },
    "budget_division": { "replicas": 1 }
  }
}`

func fullMapCfg(max int, option string) string {
	return strings.NewReplacer("%MAX%", strconv.Itoa(max), "%OPTION%", option).Replace(fullMapConfig)
}

// fillWithMadeUpKeys sends n requests with made-up keys, each answered 401
// upstream, on both workers in turn.
func fillWithMadeUpKeys(x *harness, n int) {
	for i := range n {
		r := x.doOn(i%2, call{key: "sk-made-up-" + strconv.Itoa(i), body: chatBody("hello", 10), status: 401,
			chunks: []string{`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`}})
		require.Equal(x.t, 401, r.status)
	}
}

// keyRun sends up to max requests of about 400 tokens on key, alternating
// workers, each answered with 400 tokens of usage, and stops at the first
// refusal: how many were served, and the decisions of those served.
func keyRun(x *harness, key string, max int) (served int, skipped []string, refusal reply) {
	body := chatBody("hello", 390)
	for i := range max {
		r := x.doOn(i%2, call{key: key, body: body, chunks: []string{chatResponse(10, 390)}})
		if r.local {
			return served, skipped, r
		}
		served++
		if s, ok := r.decision["skipped"].([]any); ok {
			for _, v := range s {
				skipped = append(skipped, v.(string))
			}
		}
	}
	return served, skipped, reply{}
}

// The attack of issue 34: 40 made-up keys answered 401 on a 20-entry map
// left every later key unlimited (16 × 400 tokens through a 5,000/min
// budget, "skipped": ["token_budget"]). The made-up keys' buckets are whole
// again once their holds end, so a new key takes one's slot and its budget
// holds: 12 × 400 served, the 13th refused.
func TestAMapFullOfMadeUpKeysLeavesANewKeysBudgetInForce(t *testing.T) {
	x := newHarness(t, fullMapCfg(20, ""))
	fillWithMadeUpKeys(x, 40)
	x.h.Tick()
	require.Equal(t, int64(100), x.gauge(metrics.Name(metrics.BucketMapFill, metrics.LabelDimension, "token_budget")), "the map is at its ceiling")

	served, skipped, refused := keyRun(x, "sk-real-new", 16)
	require.Empty(t, skipped, "no request of the new key failed open")
	require.Equal(t, 12, served, "5,000 tokens a minute hold 12 requests of 400")
	require.Equal(t, 429, refused.status)
	require.Zero(t, x.metric(metrics.Skipped, metrics.LabelDimension, "token_budget"))
}

// When every slot holds a bucket that is not whole, the specification's
// rule applies: the dimension fails open, counted; with on_full_bucket_map
// "refuse" the request is answered 503.
func TestAMapWithNoBucketToDropFailsOpenOrRefusesAsConfigured(t *testing.T) {
	for _, c := range []struct {
		rule, option string
		status       int
	}{
		{"fails open, counted, by default", "", 200},
		{"refuses with on_full_bucket_map refuse", `, "on_full_bucket_map": "refuse"`, 503},
	} {
		t.Run(c.rule, func(t *testing.T) {
			// One bucket under its own key and one reusable slot, both
			// taken by keys that spend on a frozen clock: neither is ever
			// whole again.
			x := newHarness(t, fullMapCfg(1, c.option))
			for i := range 2 {
				r := x.doOn(i%2, call{key: "sk-busy-" + strconv.Itoa(i), body: chatBody("hello", 390), chunks: []string{chatResponse(10, 390)}})
				require.Equal(t, 200, r.status)
				require.False(t, r.local)
			}
			r := x.do(call{key: "sk-one-more", body: chatBody("hello", 390), chunks: []string{chatResponse(10, 390)}})
			require.Equal(t, c.status, r.status, string(r.body))
			if c.status == 200 {
				require.Equal(t, []any{"token_budget"}, r.decision["skipped"])
				require.Equal(t, int64(1), x.metric(metrics.Skipped, metrics.LabelDimension, "token_budget"))
			} else {
				require.Equal(t, "bucket_map_full", r.decision["code"])
			}
		})
	}
}
