package wasmtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// spendConfig prices gpt-4o at $2.50 / $1.25 cached / $10 per million
// tokens: 1000 prompt and 500 completion tokens cost $0.0075
// (7,500,000 nano-USD). Key sk-a (id a, user alice, team eng) may spend
// $0.01 a day and $1 a month; the team $100 a month; key sk-free has no
// limit of its own and no team. Nothing is reserved (reserve false): these
// tests pin the check-only rule; reserve_test.go the reservation.
const spendConfig = `{
  "pricing": {"gpt-4o": {"input": "2.50", "cached_input": "1.25", "output": "10.00"}},
  "spend_limits": {"reserve": false, "teams": {"eng": {"month_usd": 100}}, "users": {"bob": {"day_usd": 0}}},
  "api_keys": [
    {"key": "sk-a", "id": "a", "user": "alice", "team": "eng", "spend_limit_day_usd": "0.01", "spend_limit_month_usd": 1},
    {"key": "sk-b", "id": "b", "user": "bob"},
    {"key": "sk-t", "id": "t", "team": "eng"},
    {"key": "sk-free", "id": "free"}
  ]
}`

const costOf1000And500 = 7_500_000 // nano-USD

// 2026-09-14 23:59:59 UTC.
var sep14Last = time.Unix(1789430399, 0)

func spendHarness(t *testing.T, cfg string) *harness {
	t.Helper()
	x := newHarness(t, cfg)
	x.clock.mu.Lock()
	x.clock.t = sep14Last.Add(-12 * time.Hour)
	x.clock.mu.Unlock()
	return x
}

func (x *harness) priced(key string, prompt, completion int) reply {
	x.t.Helper()
	return x.do(call{key: key, body: chatBody("hello", 600), chunks: []string{chatResponse(prompt, completion)}})
}

func TestSpendPreflightRefusesAKeyAtItsDailyLimit(t *testing.T) {
	x := spendHarness(t, spendConfig)
	require.Equal(t, 200, x.priced("sk-a", 1000, 500).status)
	require.Equal(t, 200, x.priced("sk-a", 1000, 500).status, "$0.0075 < $0.01: still room")
	r := x.priced("sk-a", 1000, 500)
	require.Equal(t, 429, r.status)
	require.True(t, r.local)
	require.JSONEq(t, `{"error":{"type":"insufficient_quota","code":"spend_limit_exceeded","message":"API Key daily spend limit exceeded.",
		"details":{"scope":"api_key","period":"day","period_end":"2026-09-15T00:00:00Z","limit_usd":"0.01","usage_usd":"0.015"}}}`, string(r.body))
	require.Equal(t, "false", r.header("x-should-retry"))
	_, hasRetry := r.headers.Get("retry-after")
	require.False(t, hasRetry, "retrying before the period ends cannot succeed")
	require.Equal(t, "refused", r.decision["outcome"])
	require.Equal(t, "spend_limit", r.decision["limit_type"])
	require.Equal(t, "api_key", r.decision["spend_scope"])
	require.Equal(t, "day", r.decision["spend_period"])
	require.Equal(t, int64(1), x.metric(metrics.SpendRefusals, metrics.LabelScope, "api_key", metrics.LabelPeriod, "day"))
	require.Equal(t, int64(1), x.metric(metrics.Exceeded, metrics.LabelLimitType, "spend_limit"))
}

func TestSuccessHeadersShowOnlyTheCallersOwnKeySpend(t *testing.T) {
	x := spendHarness(t, spendConfig)
	first := x.priced("sk-a", 1000, 500)
	require.Equal(t, "0.01", first.header("x-spend-day-limit-usd"))
	require.Equal(t, "0.01", first.header("x-spend-day-remaining-usd"), "before this request's own cost")
	require.Equal(t, "1789430400", first.header("x-spend-day-reset"))
	require.Equal(t, "1.00", first.header("x-spend-month-limit-usd"))
	require.Equal(t, "1790812800", first.header("x-spend-month-reset"), "2026-10-01")
	second := x.priced("sk-a", 1, 1)
	require.Equal(t, "0.0025", second.header("x-spend-day-remaining-usd"))
	require.Equal(t, "0.9925", second.header("x-spend-month-remaining-usd"))

	team := x.priced("sk-t", 1, 1)
	require.Equal(t, 200, team.status)
	for _, h := range team.headers {
		require.False(t, strings.HasPrefix(h[0], "x-spend-"), "the team's spend is not the caller's to read: %s", h[0])
	}
}

func TestSpendIsRecordedInTheDecisionAndTheNanoUSDMetric(t *testing.T) {
	x := spendHarness(t, spendConfig)
	r := x.priced("sk-a", 1000, 500)
	require.Equal(t, float64(costOf1000And500), r.decision["spend_nano_usd"])
	require.Equal(t, "0.0075", r.decision["spend_usd"])
	require.Equal(t, int64(costOf1000And500), x.metric(metrics.SpendUSD, metrics.LabelScope, "api_key"))
	require.Equal(t, int64(costOf1000And500), x.metric(metrics.SpendUSD, metrics.LabelScope, "team"))
	require.Equal(t, int64(0), x.metric(metrics.SpendUSD, metrics.LabelScope, "user"), "alice has no user limit")
}

func TestEverySpendLimitMustPass(t *testing.T) {
	cfg := strings.Replace(spendConfig, `"month_usd": 100`, `"month_usd": "0.005"`, 1)
	x := spendHarness(t, cfg)
	require.Equal(t, 200, x.priced("sk-t", 1000, 500).status, "the team's first request")
	r := x.priced("sk-a", 1, 1)
	require.Equal(t, 429, r.status, "a key far under its own limits is refused when its team's month is spent")
	require.JSONEq(t, `{"error":{"type":"insufficient_quota","code":"spend_limit_exceeded","message":"Team monthly spend limit exceeded.",
		"details":{"scope":"team","period":"month","period_end":"2026-10-01T00:00:00Z"}}}`, string(r.body),
		"a team's limit and usage are withheld")
}

func TestASpendLimitOfZeroBlocks(t *testing.T) {
	x := spendHarness(t, spendConfig)
	r := x.priced("sk-b", 1, 1)
	require.Equal(t, 429, r.status)
	require.Contains(t, string(r.body), "User daily spend limit exceeded.")
}

func TestNoSpendPolicyChecksAndCountsNothing(t *testing.T) {
	x := spendHarness(t, spendConfig)
	r := x.do(call{key: "sk-free", body: strings.Replace(chatBody("hi", 10), "gpt-4o", "unpriced-model", 1),
		chunks: []string{chatResponse(1000, 500)}})
	require.Equal(t, 200, r.status, "an unpriced model is fine where no limit applies")
	for _, h := range r.headers {
		require.False(t, strings.HasPrefix(h[0], "x-spend-"), h[0])
	}
	require.NotContains(t, r.decision, "spend_nano_usd")
	require.Equal(t, int64(0), x.metric(metrics.SpendUSD, metrics.LabelScope, "api_key"))
}

func TestAModelWithoutAPriceIsRefusedWhenASpendLimitApplies(t *testing.T) {
	x := spendHarness(t, spendConfig)
	r := x.do(call{key: "sk-a", body: strings.Replace(chatBody("hi", 10), "gpt-4o", "unpriced-model", 1)})
	require.Equal(t, 400, r.status)
	require.Equal(t, "model_not_priced", r.json(t)["error"].(map[string]any)["code"])
	require.Contains(t, r.json(t)["error"].(map[string]any)["message"], `"unpriced-model"`)

	x = spendHarness(t, strings.Replace(spendConfig, `"pricing": {`, `"pricing": {"default": {"input": 1, "output": 1},`, 1))
	require.Equal(t, 200, x.do(call{key: "sk-a", body: strings.Replace(chatBody("hi", 10), "gpt-4o", "unpriced-model", 1),
		chunks: []string{chatResponse(1, 1)}}).status, "the default entry prices it")
}

func TestAFailedRequestCostsNothing(t *testing.T) {
	x := spendHarness(t, spendConfig)
	r := x.do(call{key: "sk-a", body: chatBody("hello", 600), status: 500, chunks: []string{chatResponse(1000, 500)}})
	require.Equal(t, 500, r.status)
	require.NotContains(t, r.decision, "spend_nano_usd")
	require.Equal(t, "0.01", x.priced("sk-a", 1, 1).header("x-spend-day-remaining-usd"))
}

func TestACutStreamIsChargedWhatItDeliveredInUSD(t *testing.T) {
	x := spendHarness(t, spendConfig)
	// The usage chunk came (1000 in, 500 out), then the client reset before [DONE].
	r := x.do(call{key: "sk-a", body: streamBody(600, true), contentType: "text/event-stream",
		chunks: []string{openAIChunk("Once") + openAIUsageChunk(1000, 500)}, cut: true})
	require.Equal(t, "cut", r.decision["end"])
	require.Equal(t, float64(costOf1000And500), r.decision["spend_nano_usd"])
	require.Equal(t, "0.0025", x.priced("sk-a", 1, 1).header("x-spend-day-remaining-usd"))
}

func TestCachedInputIsPricedAtItsOwnRate(t *testing.T) {
	x := spendHarness(t, spendConfig)
	body := `{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":0,` +
		`"total_tokens":1000,"prompt_tokens_details":{"cached_tokens":400}}}`
	r := x.do(call{key: "sk-a", body: chatBody("hello", 600), chunks: []string{body}})
	// 600 × $2.50 + 400 × $1.25 per million = 1,500,000 + 500,000 nano-USD.
	require.Equal(t, float64(2_000_000), r.decision["spend_nano_usd"])
}

func TestACallStraddlingMidnightCountsInTheDayItStarted(t *testing.T) {
	x := spendHarness(t, spendConfig)
	x.clock.mu.Lock()
	x.clock.t = sep14Last
	x.clock.mu.Unlock()
	s := x.h.NewStream(host.StreamInfo{Worker: 0, SourceAddress: "10.0.0.1:1"})
	res := s.RequestHeaders(host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
		{"authorization", "Bearer sk-a"}}, false)
	require.Equal(t, host.Continue, res.Action)
	res = s.RequestBody([]byte(chatBody("hello", 600)), true)
	if res.Action == host.Pause {
		res = s.Wait(context.Background())
	}
	require.Equal(t, host.Continue, res.Action)
	x.clock.Advance(5 * time.Second) // now 2026-09-15 00:00:04
	res = s.ResponseHeaders(host.Headers{{":status", "200"}, {"content-type", "application/json"}}, false)
	v, _ := res.Headers.Get("x-spend-day-reset")
	require.Equal(t, "1789430400", v, "the hold's day is September 14")
	s.ResponseBody([]byte(chatResponse(1000, 500)), true)
	s.Done()

	next := x.priced("sk-a", 1, 1)
	require.Equal(t, "0.01", next.header("x-spend-day-remaining-usd"), "September 15 starts from $0")
	require.Equal(t, "0.9925", next.header("x-spend-month-remaining-usd"), "September kept the cost")
}

func TestARequestWithMoreImagesThanTheModelAllowsIsRefused(t *testing.T) {
	x := newHarness(t, `{"models":{"gpt-4o":{"max_images_per_request":2}}}`)
	img := `{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}`
	body := func(n int) string {
		return `{"model":"gpt-4o","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"what"}` +
			repeat(","+img, n) + `]}]}`
	}
	ok := x.do(call{key: "sk-a", body: body(2), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 200, ok.status, "at the limit")
	r := x.do(call{key: "sk-a", body: body(3)})
	require.Equal(t, 400, r.status)
	e := r.json(t)["error"].(map[string]any)
	require.Equal(t, "too_many_images", e["code"])
	require.Equal(t, "This request carries 3 images; model gpt-4o accepts at most 2 per request.", e["message"])

	other := x.do(call{key: "sk-a", body: replace(body(3), "gpt-4o", "o1"), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 200, other.status, "the limit is the model's own")
	// A name that extends gpt-4o at a boundary is gpt-4o's as long as no
	// entry of its own says otherwise (shared/modelname).
	variant := x.do(call{key: "sk-a", body: replace(body(3), "gpt-4o", "gpt-4o-mini")})
	require.Equal(t, 400, variant.status, "an unlisted gpt-4o-mini meets gpt-4o's limit")
}
