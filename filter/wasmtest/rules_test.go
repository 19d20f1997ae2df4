package wasmtest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// Under on_unreadable_body "admit" a body larger than max_body_bytes passes
// unchanged, holding its bytes' estimate plus default_output_tokens (never
// a zero hold), and request-count limits still apply.
func TestUnderAdmitABodyLargerThanThePeekLimitHoldsItsBytesAndTheDefaultOutput(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000,"requests_per_minute":5}},
		"budget_division":{"replicas":1}},"token_budget":{"max_body_bytes":2048,"on_unreadable_body":"admit"}}`)
	big := chatBody(strings.Repeat("a", 4096), 100000)
	r := x.do(call{key: "sk-a", body: big, chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, big, string(r.upstreamBody), "the body passes unchanged")
	require.Equal(t, strconv.FormatInt(100000-estimate.Bytes(int64(len(big)))-4096, 10), r.header("x-ratelimit-tokens-remaining"),
		"held: its declared length's estimate plus the default output")
	require.Equal(t, "4", r.header("x-ratelimit-requests-minute-remaining"), "request-count limits still apply")
	require.Equal(t, int64(1), x.metric(metrics.FailOpen, metrics.LabelReason, "body_too_large"))
}

func TestARequestLargerThanTheWholeBudgetIsRefusedAtOnceWithASizeAwareRetryAfter(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":6000}},"budget_division":{"replicas":1}}}`)
	r := x.do(call{key: "sk-a", body: chatBody("hi", 12000)})
	require.Equal(t, 429, r.status)
	// 12000+ tokens at 100 tokens/s: the time to refill the request's own cost.
	ra := atoi(t, r.header("retry-after"))
	require.GreaterOrEqual(t, ra, int64(120))
	require.LessOrEqual(t, ra, int64(121))
	require.Equal(t, "6000", r.header("x-ratelimit-tokens-remaining"), "nothing was taken")
}

// A hold taken before a reload settles on the bucket and parameters it was
// taken on, not on the live ones.
func TestSettlementUsesTheParametersRecordedOnTheHoldAfterAReload(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	s := x.h.NewStream(host.StreamInfo{Worker: 0, SourceAddress: "10.0.0.1:1"})
	s.RequestHeaders(host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
		{"authorization", "Bearer sk-a"}}, false)
	res := s.RequestBody([]byte(chatBody("hello", 4000)), true)
	if res.Action == host.Pause {
		res = s.Wait(context.Background())
	}
	require.Equal(t, host.Continue, res.Action)

	require.NoError(t, x.h.Reload(context.Background(), []byte(strings.Replace(keyBudgetConfig, "10000", "50000", 1))))
	s.ResponseHeaders(host.Headers{{":status", "200"}, {"content-type", "application/json"}}, false)
	s.ResponseBody([]byte(chatResponse(100, 100)), true)
	s.Done()

	// The new 50000 bucket is fresh and untouched by the old hold's settle.
	probe := reservedBy2(t, reply{}, 0)
	r := x.do(call{key: "sk-a", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, "50000", r.header("x-ratelimit-tokens-limit"))
	require.Equal(t, 50000-probe, atoi(t, r.header("x-ratelimit-tokens-remaining")))
	// Back on the old parameters, the old bucket shows exactly the settled
	// usage: the hold was settled there, with its recorded numbers.
	require.NoError(t, x.h.Reload(context.Background(), []byte(keyBudgetConfig)))
	r = x.do(call{key: "sk-a", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, "10000", r.header("x-ratelimit-tokens-limit"))
	require.Equal(t, 10000-200-probe, atoi(t, r.header("x-ratelimit-tokens-remaining")))
}
