package wasmtest

// Rules found by an adversarial review of the filter: spellings, bodies and
// answers a backend serves must never make a request free.

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// uvicorn (FastAPI: vLLM, SGLang, LiteLLM) percent-decodes the whole path
// into scope["path"], %2F included; Go's ServeMux decodes unreserved
// escapes. Envoy forwards these unchanged by default.
func TestAPercentEncodedRouteIsStillMetered(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	for _, p := range []string{"/v1/%63hat/completions", "/v1/chat%2Fcompletions", "/v1/chat%2fcompletions",
		"/%761/messages", "/v1/respons%65s"} {
		r := x.do(call{path: p, key: "sk-pct", body: chatBody("hello", 100), chunks: []string{chatResponse(1, 1)}})
		require.True(t, metered(r), "%s is served as a generation route", p)
	}
}

// Express (Node) and ASP.NET Core route case-insensitively by default.
func TestAnUpperCaseRouteIsStillMetered(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	for _, p := range []string{"/V1/CHAT/COMPLETIONS", "/v1/Chat/Completions", "/V1/messages"} {
		r := x.do(call{path: p, key: "sk-case", body: chatBody("hello", 100), chunks: []string{chatResponse(1, 1)}})
		require.True(t, metered(r), "%s", p)
	}
}

// Spring MVC on Tomcat strips ;path-parameters before matching.
func TestAMatrixParameterRouteIsStillMetered(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	for _, p := range []string{"/v1/chat/completions;x", "/v1/chat;a=b/completions", "/v1/messages;jsessionid=1?beta=true"} {
		r := x.do(call{path: p, key: "sk-semi", body: chatBody("hello", 100), chunks: []string{chatResponse(1, 1)}})
		require.True(t, metered(r), "%s", p)
	}
}

// Python's json.loads(bytes) (Starlette Request.json, FastAPI) accepts a
// UTF-8 BOM and the NaN/Infinity literals; Go's json.Decoder (gin: Ollama)
// reads the first value and ignores what follows. A body the backend serves
// must not fail open into an unreserved, never-settled request: it is
// refused with a 400 by default, and metered under on_unreadable_body
// "admit".
func TestABodyABackendParsesIsStillMetered(t *testing.T) {
	refuse := newHarness(t, keyBudgetConfig)
	admit := newHarness(t, strings.TrimSuffix(keyBudgetConfig, "}")+`,"token_budget":{"on_unreadable_body":"admit"}}`)
	good := chatBody("hello", 5000)
	for name, body := range map[string]string{
		"bom":           "\xef\xbb\xbf" + good,
		"nan":           strings.Replace(good, `{`, `{"temperature_hint":NaN,`, 1),
		"infinity":      strings.Replace(good, `{`, `{"x":-Infinity,`, 1),
		"trailing data": good + `{"junk":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := refuse.do(call{key: "sk-parse-" + name, body: body, chunks: []string{chatResponse(1, 1)}})
			require.Equal(t, 400, r.status, name)
			require.True(t, r.local, name)
			r = admit.do(call{key: "sk-parse-" + name, body: body, chunks: []string{chatResponse(1, 1)}})
			require.True(t, metered(r), name)
		})
	}
}

// Repeated members are compared by decoded name: were an escaped second
// copy not seen as a repeat, the clamp would leave the first (small) copy
// alone and a last-wins backend would read the huge one.
func TestAnEscapedDuplicateCeilingCannotSlipPastTheClamp(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "token_budget":{"default_output_tokens":500},
	  "models":{"gpt-4o":{"max_tokens_per_request":1000,"on_max_tokens":"clamp"}}}`
	x := newHarness(t, cfg)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":10,"max\u005ftokens":99999}`
	r := x.do(call{key: "sk-a", body: body, chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 400, r.status, "a repeated ceiling, escaped or not, is refused under clamp: %s", r.upstreamBody)
	require.Equal(t, "max_tokens", r.json(t)["error"].(map[string]any)["param"])
}

// logprobs / top_logprobs make a non-streamed answer large: past 8 MiB
// the filter once stopped copying it and charged its hold. It is read as it
// passes and charged exactly the usage it reports.
func TestAnOversizeNonStreamedAnswerIsNotFree(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	filler := `{"token":"x","logprob":-0.1,"bytes":[120],"top_logprobs":[]},`
	head := `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},"logprobs":{"content":[`
	var chunks []string
	chunks = append(chunks, head)
	block := strings.Repeat(filler, (64<<10)/len(filler))
	for n := 0; n < (9<<20)/len(block); n++ {
		chunks = append(chunks, block)
	}
	chunks = append(chunks, `{"token":"x","logprob":0,"bytes":[120],"top_logprobs":[]}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3000,"total_tokens":3010}}`)
	r := x.do(call{key: "sk-big", body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":4000,"logprobs":true,"top_logprobs":20}`, chunks: chunks})
	require.Equal(t, 200, r.status)
	require.Equal(t, int64(100000-3010), x.level(t, "sk-big", probe), "a 3010-token answer is charged 3010")
}

// response.completed carries the whole Response (output text, logprobs);
// an event past 1 MiB is dropped unread, so the stream's usage cannot be
// read: it is charged its hold plus an estimate of its 1.1 MiB, more than
// the whole 100,000-token budget, so the key is in debt and refuses the
// next request.
func TestAnOversizeResponsesCompletedEventIsNotFree(t *testing.T) {
	x := newHarness(t, streamCfg(true, false))
	big := strings.Repeat("lorem ipsum ", (1100<<10)/12)
	sse := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"" + big + "\"}]}],\"usage\":{\"input_tokens\":20,\"output_tokens\":9000,\"total_tokens\":9020}}}\n\n"
	body := `{"model":"gpt-4o","input":"hi","stream":true,"max_output_tokens":10000}`
	var chunks []string
	for i := 0; i < len(sse); i += 16 << 10 {
		chunks = append(chunks, sse[i:min(i+16<<10, len(sse))])
	}
	x.do(call{path: "/v1/responses", key: "sk-resp", body: body, contentType: "text/event-stream", chunks: chunks})
	x.h.Tick()
	r := x.do(call{key: "sk-resp", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 429, r.status, "the answer's bytes were charged")
}

// An Anthropic-style caller authenticates with x-api-key; a throwaway
// Bearer beside it must not give the filter a fresh per_api_key bucket on
// every request: two different keys are refused.
func TestAnExtraBearerCannotMoveAnXAPIKeyCallerToFreshBuckets(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	body := `{"model":"claude","max_tokens":4000,"messages":[{"role":"user","content":"hi"}]}`
	for i := 0; i < 3; i++ {
		r := x.do(call{path: "/v1/messages", body: body,
			headers: host.Headers{{"x-api-key", "sk-ant-real"}, {"authorization", "Bearer junk-" + itoa(i)}}})
		require.Equal(t, 400, r.status)
		require.Equal(t, "conflicting_api_keys", r.json(t)["error"].(map[string]any)["code"])
	}
}
