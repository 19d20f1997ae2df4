package wasmtest

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/identity"
)

// The rules of this file close ways a client could make tokens free or
// revive a spent bucket; each pins the default and, where the seed's rule
// stays behind an option, that option too.

const cutConfig = `{
  "rate_limiting": {
    "limits": { "per_api_key": { "tokens_per_minute": 20000 } },
    "budget_division": { "replicas": 1 }
  },
  "token_budget": { "inject_stream_usage": false %POLICY% }
}`

func cutCfg(policy string) string {
	if policy == "" {
		return strings.Replace(cutConfig, "%POLICY%", "", 1)
	}
	return strings.Replace(cutConfig, "%POLICY%", `, "on_cut_stream": "`+policy+`"`, 1)
}

func anthropicChunk(event, data string) string { return "event: " + event + "\ndata: " + data + "\n\n" }

func TestACutStreamIsChargedWhatItDelivered(t *testing.T) {
	story := openAIChunk("Once") + openAIChunk(" upon") + openAIChunk(" a time")
	deltas := estimate.Text([]byte("Once")) + estimate.Text([]byte(" upon")) + estimate.Text([]byte(" a time"))
	anthropicStart := anthropicChunk("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":30,"output_tokens":1}}}`)
	anthropicDelta := anthropicChunk("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a long answer that goes on"}}`)
	anthropicBody := `{"model":"claude","max_tokens":1000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name   string
		call   call
		policy string
		charge func(c call) int64
	}{
		{"client reset mid-stream: input estimate plus deltas",
			call{body: streamBody(1000, false), contentType: "text/event-stream", chunks: []string{story}, cut: true}, "",
			func(c call) int64 { return inputOf(t, c.body) + deltas }},
		{"stream ended without its final event (an upstream reset)",
			call{body: streamBody(1000, false), contentType: "text/event-stream", chunks: []string{story}}, "",
			func(c call) int64 { return inputOf(t, c.body) + deltas }},
		{"the usage seen before the cut",
			call{body: streamBody(1000, true), contentType: "text/event-stream",
				chunks: []string{openAIChunk("a") + openAIUsageChunk(300, 700)}, cut: true}, "",
			func(call) int64 { return 300 + 700 }},
		{"Anthropic cut after message_start: reported input plus the deltas counted",
			call{path: "/v1/messages", body: anthropicBody, contentType: "text/event-stream",
				chunks: []string{anthropicStart + anthropicDelta}, cut: true}, "",
			func(call) int64 { return 30 + estimate.Text([]byte("a long answer that goes on")) }},
		{"a non-streamed answer cut mid-body: its hold and its bytes",
			call{body: chatBody("hi", 1000), chunks: []string{`{"id":"x","choices":[{"message":{"content":"par`}, cut: true}, "",
			func(c call) int64 { return inputOf(t, c.body) + 1000 + estimate.Bytes(int64(len(c.chunks[0]))) }},
		{"release keeps the seed's rule",
			call{body: streamBody(1000, false), contentType: "text/event-stream", chunks: []string{story}, cut: true}, "release",
			func(call) int64 { return 0 }},
		{"an error answer cut mid-body costs nothing",
			call{body: streamBody(1000, false), status: 503, chunks: []string{`{"error":`}, cut: true}, "",
			func(call) int64 { return 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := cutCfg(c.policy)
			probe := probeReserve(t, cfg)
			x := newHarness(t, cfg)
			c.call.key = "sk-cut"
			r := x.do(c.call)
			require.Equal(t, c.call.statusOr200(), r.status)
			require.Equal(t, 20000-c.charge(c.call), x.level(t, "sk-cut", probe))
		})
	}
}

func (c call) statusOr200() int {
	if c.status == 0 {
		return 200
	}
	return c.status
}

func TestAStreamResetBeforeItsAnswerIsChargedItsInput(t *testing.T) {
	for _, policy := range []string{"", "release"} {
		t.Run("policy "+policy, func(t *testing.T) {
			cfg := cutCfg(policy)
			probe := probeReserve(t, cfg)
			x := newHarness(t, cfg)
			body := chatBody("tell me everything you know", 2000)
			s := x.h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.0.0.1:1000"})
			s.RequestHeaders(host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
				{"authorization", "Bearer sk-early"}}, false)
			res := s.RequestBody([]byte(body), true)
			if res.Action == host.Pause {
				res = s.Wait(context.Background())
			}
			require.Equal(t, host.Continue, res.Action)
			s.Done() // the client went away before the backend answered
			want := int64(20000) - inputOf(t, body)
			if policy == "release" {
				want = 20000
			}
			require.Equal(t, want, x.level(t, "sk-early", probe), "the backend read the prompt")
		})
	}
}

func TestTwentyCutStreamsCannotOutrunTheBudget(t *testing.T) {
	cfg := cutCfg("")
	x := newHarness(t, cfg)
	// Each stream delivers 4,000 tokens of output and is cut before [DONE]:
	// the attack that once served 80,000 tokens through a 20,000 budget.
	word := strings.Repeat("lorem ", 500)
	chunk := openAIChunk(word)
	perChunk := estimate.Text([]byte(word))
	var served, admitted int
	for i := 0; i < 20; i++ {
		chunks := make([]string, 0, 8)
		for n := int64(0); n < 4000; n += perChunk {
			chunks = append(chunks, chunk)
		}
		r := x.do(call{key: "sk-attack", body: streamBody(4096, false), contentType: "text/event-stream",
			chunks: []string{strings.Join(chunks, "")}, cut: true})
		if r.status == 200 {
			admitted++
			served += 4000
		}
	}
	require.LessOrEqual(t, admitted, 5, "each cut stream paid for what it delivered")
	require.LessOrEqual(t, served, 20000+4096+4000)
}

func TestARepeatedKeyHeaderCannotReviveASpentKey(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000}},"budget_division":{"replicas":1}}}`
	x := newHarness(t, cfg)
	// Drain the key.
	r := x.do(call{key: "sk-spent", body: chatBody("hi", 900), chunks: []string{chatResponse(10, 890)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, 429, x.do(call{key: "sk-spent", body: chatBody("hi", 500)}).status)
	for _, c := range []struct {
		name    string
		headers host.Headers
	}{
		{"authorization twice with the same key (Envoy joins it)", host.Headers{{"authorization", "Bearer sk-spent,Bearer sk-spent"}}},
		{"the key plus a second value", host.Headers{{"authorization", "Bearer sk-spent, x"}}},
		{"two keys joined by a comma", host.Headers{{"authorization", "Bearer sk-spent,sk-fresh"}}},
		{"x-api-key twice", host.Headers{{"x-api-key", "sk-spent"}, {"x-api-key", "sk-spent"}}},
		{"x-api-key twice, different keys", host.Headers{{"x-api-key", "sk-fresh"}, {"x-api-key", "sk-spent"}}},
		{"authorization as two entries", host.Headers{{"authorization", "Bearer sk-spent"}, {"authorization", "Bearer sk-fresh"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := x.do(call{body: chatBody("hi", 500), headers: c.headers, chunks: []string{chatResponse(1, 1)}})
			require.Equal(t, 400, r.status, string(r.body))
			require.Equal(t, "conflicting_api_keys", r.json(t)["error"].(map[string]any)["code"])
			require.Equal(t, "false", r.header("x-should-retry"))
			require.Nil(t, r.upstreamBody, "nothing reached the backend")
		})
	}
}

func TestKeysCanBeRequiredAndLimitedToTheConfiguredOnes(t *testing.T) {
	known := identity.HashKey("sk-known")
	base := `"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":10000}},"budget_division":{"replicas":1}},
	  "api_keys":[{"key":"sha256:` + known + `","id":"team-a-key"}]`
	cases := []struct {
		name     string
		identity string
		key      string
		want     int
	}{
		{"a missing key skips by default", ``, "", 200},
		{"an unknown key gets its own budget by default", ``, "sk-stranger", 200},
		{"a missing key is refused when keys are required", `"missing_api_key":"refuse"`, "", 401},
		{"a known key passes when keys are required", `"missing_api_key":"refuse"`, "sk-known", 200},
		{"an unknown key is refused when only listed keys pass", `"unknown_api_keys":"refuse"`, "sk-stranger", 401},
		{"a listed key passes when only listed keys pass", `"unknown_api_keys":"refuse"`, "sk-known", 200},
		{"a missing key still skips when only unknown keys are refused", `"unknown_api_keys":"refuse"`, "", 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newHarness(t, `{`+base+`,"identity":{`+c.identity+`}}`)
			r := x.do(call{key: c.key, body: chatBody("hi", 10), chunks: []string{chatResponse(1, 1)}})
			require.Equal(t, c.want, r.status, string(r.body))
			if c.want == 401 {
				e := r.json(t)["error"].(map[string]any)
				require.Equal(t, "invalid_api_key", e["code"])
				require.Equal(t, "invalid_request_error", e["type"])
				require.Equal(t, "false", r.header("x-should-retry"))
				require.NotContains(t, string(r.body), "sk-stranger", "the key is never echoed")
				require.Nil(t, r.upstreamBody)
			}
		})
	}
}

func TestAWhitelistedClientNeedsNoKey(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":10}},"whitelist":["10.9.0.0/16"],
	  "budget_division":{"replicas":1}},"identity":{"missing_api_key":"refuse","unknown_api_keys":"refuse"}}`)
	r := x.do(call{source: "10.9.1.1:5000", body: chatBody("hi", 10), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 200, r.status)
	r = x.do(call{source: "10.8.1.1:5000", body: chatBody("hi", 10)})
	require.Equal(t, 401, r.status)
}

func TestARequestThatCanNeverFitIsToldNotToRetry(t *testing.T) {
	x := newHarness(t, cutCfg(""))
	r := x.do(call{key: "sk-big", body: chatBody("hi", 30000)})
	require.Equal(t, 429, r.status)
	require.Equal(t, "false", r.header("x-should-retry"), "SDKs that honour it stop retrying")
	require.NotEmpty(t, r.header("retry-after"), "Retry-After stays size-aware")
	d := details(t, r)
	require.Equal(t, true, d["exceeds_capacity"])
	require.Contains(t, r.json(t)["error"].(map[string]any)["message"], "larger than the whole api_key minute token budget")

	fits := x.do(call{key: "sk-big", body: chatBody("hi", 10000), chunks: []string{chatResponse(10, 10)}})
	require.Equal(t, 200, fits.status)
	require.Empty(t, fits.header("x-should-retry"))
}

func TestADebtShowsNoRemainingAndARetryAfterThatCountsIt(t *testing.T) {
	x := newHarness(t, cutCfg(""))
	// No ceiling: the hold is input + 4,096; the backend reports 50,000.
	r := x.do(call{key: "sk-debt", body: `{"model":"gpt-4o","messages":[{"role":"user","content":"go"}]}`,
		chunks: []string{chatResponse(10, 49990)}})
	require.Equal(t, 200, r.status)
	refused := x.do(call{key: "sk-debt", body: chatBody("hi", 10)})
	require.Equal(t, 429, refused.status)
	require.Equal(t, "0", refused.header("x-ratelimit-tokens-remaining"), "a level below zero shows as 0")
	// 30,000 tokens of debt plus this request, at 20,000 a minute: 90 s or more.
	require.GreaterOrEqual(t, atoi(t, refused.header("retry-after")), int64(90))
	// Waiting cures a debt, and Retry-After says how long; past a minute the SDKs are told not
	// to sleep through it in their retry loop.
	require.Equal(t, "false", refused.header("x-should-retry"), "a wait over a minute is not one to retry through")
}
