package wasmtest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

const keyBudgetConfig = `{
  "rate_limiting": {
    "limits": { "per_api_key": { "tokens_per_minute": 10000, "tokens_per_day": 1000000 } },
    "budget_division": { "replicas": 1 }
  }
}`

func atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "not a number: %q", s)
	return n
}

// reservedBy learns what one request reserves from the remaining header of a
// fresh bucket: capacity minus remaining.
func reservedBy(t testing.TB, r reply) int64 {
	t.Helper()
	return atoi(t, r.header("x-ratelimit-tokens-limit")) - atoi(t, r.header("x-ratelimit-tokens-remaining"))
}

func TestAdmittedResponsesCarryTheAPIKeyTokenHeaders(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	r := x.do(call{key: "sk-a", body: chatBody("hello there", 500), chunks: []string{chatResponse(10, 5)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, "10000", r.header("x-ratelimit-tokens-limit"))
	require.Equal(t, "1000000", r.header("x-ratelimit-tokens-day-limit"))
	reserved := reservedBy(t, r)
	require.Greater(t, reserved, int64(500), "the hold is the input estimate plus the output ceiling")
	require.Less(t, reserved, int64(600))
	now := x.clock.Now().Unix()
	require.GreaterOrEqual(t, atoi(t, r.header("x-ratelimit-tokens-reset")), now)
}

func TestTheKeyIsRefusedOnceItsMinuteBudgetIsSpent(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	body := chatBody("hello", 2000)
	admitted := 0
	var last reply
	for i := 0; i < 10; i++ {
		// Requests are left unanswered (cut) only after the budget check:
		// each completes with usage equal to its reservation.
		last = x.do(call{key: "sk-a", body: body, chunks: []string{chatResponse(2000, 0)}})
		if last.status != 200 {
			break
		}
		admitted++
	}
	require.Equal(t, 429, last.status)
	require.True(t, last.local)
	require.Equal(t, 4, admitted, "10000 tokens hold four requests of ~2000+estimate")
	m := last.json(t)
	e := m["error"].(map[string]any)
	d := e["details"].(map[string]any)
	require.Equal(t, "token_budget", d["limit_type"])
	require.Equal(t, "api_key", d["token_dimension"])
	require.Equal(t, "minute", d["token_budget"])
	require.Contains(t, d, "capacity")
	require.Contains(t, d, "remaining")
	require.Equal(t, "10000", last.header("x-ratelimit-tokens-limit"))
	require.NotEmpty(t, last.header("x-ratelimit-tokens-remaining"))
	ra := atoi(t, last.header("retry-after"))
	require.GreaterOrEqual(t, ra, int64(1))
	require.LessOrEqual(t, ra, int64(60))
	require.Equal(t, int64(1), x.metric(metrics.Exceeded, metrics.LabelLimitType, "token_budget"))
	require.Equal(t, int64(1), x.metric(metrics.TokenBudgetPeriodRefusal, metrics.LabelDimension, "api_key", metrics.LabelBudget, "minute"))
}

func TestHonouringRetryAfterGetsTheNextRequestAdmitted(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	body := chatBody("hello", 2000)
	var last reply
	for i := 0; i < 10; i++ {
		// Each settles 3000 for a ~2000 hold: the overage leaves a deficit
		// that takes several seconds of refill to cover.
		last = x.do(call{key: "sk-a", body: body, chunks: []string{chatResponse(3000, 0)}})
		if last.status == 429 {
			break
		}
	}
	require.Equal(t, 429, last.status)
	ra := atoi(t, last.header("retry-after"))
	require.Greater(t, ra, int64(1), "the wait is sized to the request's shortfall")
	x.clock.Advance(secs(ra - 1))
	require.Equal(t, 429, x.do(call{key: "sk-a", body: body}).status, "a second early is still too early")
	x.clock.Advance(secs(1))
	require.Equal(t, 200, x.do(call{key: "sk-a", body: body, chunks: []string{chatResponse(1, 1)}}).status)
}

func TestAGlobalRefusalWithholdsEveryLevel(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":3000},
		"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}}}`)
	ok := x.do(call{key: "sk-a", body: chatBody("hi", 2000), chunks: []string{chatResponse(2000, 0)}})
	require.Equal(t, 200, ok.status)
	r := x.do(call{key: "sk-b", body: chatBody("hi", 2000)})
	require.Equal(t, 429, r.status)
	d := r.json(t)["error"].(map[string]any)["details"].(map[string]any)
	require.Equal(t, "global", d["token_dimension"])
	require.NotContains(t, d, "capacity")
	require.NotContains(t, d, "remaining")
	for _, h := range r.headers {
		if h[0] == "retry-after" {
			continue
		}
		require.NotContains(t, h[0], "x-ratelimit-tokens", "a shared bucket's level must not leak")
	}
	require.NotEmpty(t, r.header("retry-after"))
}

func TestSettleRefundsUnusedAndChargesOverage(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	first := x.do(call{key: "sk-a", body: chatBody("hello", 1000), chunks: []string{chatResponse(100, 50)}})
	require.Equal(t, 200, first.status)
	reserved := reservedBy(t, first)
	// After settling 150 the bucket holds 10000-150; the next request shows
	// that minus its own reservation. It runs on the other worker (round
	// robin), which sees the refund once a tick has written it.
	x.h.Tick()
	second := x.do(call{key: "sk-a", body: chatBody("hello", 1000), chunks: []string{chatResponse(1000, int(reserved))}})
	require.Equal(t, 10000-150-reserved, atoi(t, second.header("x-ratelimit-tokens-remaining")))
	// The second settled 1000+reserved: an overage of 1000 charged.
	x.h.Tick()
	third := x.do(call{key: "sk-a", body: chatBody("hello", 1000), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 10000-150-(1000+reserved)-reserved, atoi(t, third.header("x-ratelimit-tokens-remaining")))
	require.Equal(t, reserved-150+reserved-2, x.metric(metrics.TokenBudgetPeriodTokens,
		metrics.LabelDimension, "api_key", metrics.LabelBudget, "minute", metrics.LabelOutcome, "refunded"))
	require.Equal(t, int64(1000), x.metric(metrics.TokenBudgetPeriodTokens,
		metrics.LabelDimension, "api_key", metrics.LabelBudget, "minute", metrics.LabelOutcome, "charged"))
}

func TestARequestWithNoAPIKeySkipsThatDimension(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	r := x.do(call{body: chatBody("hello", 100000), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 200, r.status)
	require.Empty(t, r.header("x-ratelimit-tokens-limit"))
	require.Equal(t, int64(1), x.metric(metrics.Skipped, metrics.LabelDimension, "token_budget_api_key"))
}

// A body that is not JSON is refused with a 400 by default; under
// on_unreadable_body "admit" it goes upstream unchanged, counted as
// fail-open.
func TestABodyThatIsNotJSONIsRefusedOrUnderAdmitPassesUnchanged(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	r := x.do(call{key: "sk-a", body: "this is not json", chunks: []string{"oops"}})
	require.Equal(t, 400, r.status)
	require.True(t, r.local)
	require.Equal(t, "invalid_json", r.json(t)["error"].(map[string]any)["code"])
	require.Equal(t, "false", r.header("x-should-retry"))

	x = newHarness(t, strings.TrimSuffix(keyBudgetConfig, "}")+`,"token_budget":{"on_unreadable_body":"admit"}}`)
	r = x.do(call{key: "sk-a", body: "this is not json", chunks: []string{"oops"}})
	require.Equal(t, 200, r.status)
	require.Equal(t, "this is not json", string(r.upstreamBody))
	require.Equal(t, int64(1), x.metric(metrics.FailOpen, metrics.LabelReason, "not_json"))
}

func TestOtherPathsPassUntouched(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1}},"budget_division":{"replicas":1}}}`)
	for _, p := range []string{"/v1/models", "/v1/embeddings", "/healthz", "/v1/chat/completionsX"} {
		r := x.do(call{path: p, key: "sk-a", body: chatBody("hello", 100000), chunks: []string{"{}"}})
		require.Equal(t, 200, r.status, p)
		require.Empty(t, r.header("x-ratelimit-tokens-limit"), p)
	}
}

// Many reservations from both worker VMs at once: proxy shared data with CAS
// must admit exactly as many as fit and lose no update.
func TestConcurrentReservationsFromTwoWorkersNeverExceedTheBudget(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	body := chatBody("hello", 300)
	probe := x.do(call{key: "sk-probe", body: body, chunks: []string{chatResponse(0, 0)}})
	amount := reservedBy(t, probe)

	const n = 120
	var mu sync.Mutex
	var admitted int64
	var streams []*host.Stream
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s := x.h.NewStream(host.StreamInfo{Worker: i % 2, SourceAddress: "10.0.0.1:1000"})
			hs := host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
				{"authorization", "Bearer sk-shared"}}
			s.RequestHeaders(hs, false)
			res := s.RequestBody([]byte(body), true)
			if res.Action == host.Pause {
				res = s.Wait(context.Background())
			}
			mu.Lock()
			defer mu.Unlock()
			streams = append(streams, s)
			if res.Action == host.Continue {
				admitted++
			} else {
				require.Equal(t, 429, res.Local.Status, string(res.Local.Body))
			}
		}(i)
	}
	wg.Wait()
	require.Equal(t, 10000/amount, admitted, "exactly as many holds as fit: none lost, none over")
	for _, s := range streams {
		s.Done() // cut before any answer: each is charged the input it sent
	}
	x.h.Tick() // the releases' refunds reach shared data, for either worker
	after := x.do(call{key: "sk-shared", body: body, chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 10000-amount-admitted*inputOf(t, body), atoi(t, after.header("x-ratelimit-tokens-remaining")),
		"every cut hold ended exactly once, charged its input and nothing more")
}

// Each success header replaces every value of its name that the backend
// sent (an upstream's own rate-limit headers must not reach the client
// beside ours), and every other header reaches the client as the backend
// sent it, repeats and pseudo-headers included.
func TestTheSuccessHeadersReplaceTheBackendsOwnAndKeepEveryOtherHeader(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	backend := host.Headers{
		{"set-cookie", "a=1"}, {"x-ratelimit-tokens-limit", "999"}, {"x-request-id", "req-7"},
		{"set-cookie", "b=2"}, {"x-ratelimit-tokens-limit", "998"}, {"x-empty", ""},
	}
	r := x.do(call{key: "sk-a", body: chatBody("hello", 500), respHeaders: backend, chunks: []string{chatResponse(10, 5)}})
	require.Equal(t, 200, r.status)

	var limits, cookies []string
	for _, h := range r.headers {
		switch h[0] {
		case "x-ratelimit-tokens-limit":
			limits = append(limits, h[1])
		case "set-cookie":
			cookies = append(cookies, h[1])
		}
	}
	require.Equal(t, []string{"10000"}, limits, "ours replaces both of the backend's values")
	require.Equal(t, []string{"a=1", "b=2"}, cookies, "a repeated header keeps its values and their order")
	for _, want := range [][2]string{{":status", "200"}, {"content-type", "application/json"}, {"x-request-id", "req-7"}, {"x-empty", ""}} {
		v, ok := r.headers.Get(want[0])
		require.True(t, ok, "%s reaches the client", want[0])
		require.Equal(t, want[1], v)
	}
	require.Equal(t, "1000000", r.header("x-ratelimit-tokens-day-limit"))
}
