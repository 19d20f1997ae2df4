package wasmtest

// Adversarial review of the compiled filter: what a hostile or careless
// client can send, and what the filter must still hold to. Every test here
// passes; attacks that break a rule are described in the review report.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// metered says the filter took a token reservation on the caller's own
// bucket: the success headers name the API key's minute budget.
func metered(r reply) bool { return r.header("x-ratelimit-tokens-limit") != "" }

// exchange drives one stream with the request body cut into parts (the last
// ends the request) and plays back the upstream answer; it returns what the
// filter decided on the request and the response body the client got.
type exchange struct {
	path      string
	headers   host.Headers
	parts     []string
	status    int
	ct        string
	respParts [][]byte
	cut       bool
}

type exchanged struct {
	req      host.Result // the request direction's last result
	upstream []byte      // the request body forwarded upstream
	respHdrs host.Headers
	resp     []byte
}

func (x *harness) exchange(e exchange) exchanged {
	x.t.Helper()
	if e.path == "" {
		e.path = "/v1/chat/completions"
	}
	s := x.h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.1.2.3:40000"})
	defer s.Done()
	hs := append(host.Headers{{":method", "POST"}, {":path", e.path}, {":authority", "llm"}, {":scheme", "http"},
		{"content-type", "application/json"}}, e.headers...)
	var out exchanged
	res := s.RequestHeaders(hs, len(e.parts) == 0)
	for i, p := range e.parts {
		if res.Action == host.LocalReply {
			break
		}
		res = s.RequestBody([]byte(p), i == len(e.parts)-1)
		out.upstream = append(out.upstream, res.Body...)
	}
	if res.Action == host.Pause {
		ctx, cancel := context.WithTimeout(context.Background(), 10e9)
		res = s.Wait(ctx)
		cancel()
		out.upstream = append(out.upstream, res.Body...)
	}
	out.req = res
	if res.Action != host.Continue {
		return out
	}
	if e.status == 0 {
		e.status = 200
	}
	if e.ct == "" {
		e.ct = "application/json"
	}
	rh := s.ResponseHeaders(host.Headers{{":status", itoa(e.status)}, {"content-type", e.ct}}, len(e.respParts) == 0)
	out.respHdrs = rh.Headers
	for i, p := range e.respParts {
		r := s.ResponseBody(p, i == len(e.respParts)-1 && !e.cut)
		out.resp = append(out.resp, r.Body...)
	}
	return out
}

func bearer(key string) host.Headers { return host.Headers{{"authorization", "Bearer " + key}} }

// --- 1. Route evasion -------------------------------------------------------

// Spellings of an LLM route that backends serve as that route are metered.
// Query strings (the Anthropic SDK sends /v1/messages?beta=true), fragments
// and trailing slashes.
func TestRouteSpellingsTheFilterCoversAreMetered(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	for _, p := range []string{
		"/v1/chat/completions/", "/v1/chat/completions//", "/v1/chat/completions?x=1", "/v1/chat/completions#f",
		"/v1/chat/completions/?a=b", "/v1/chat/completions?", "/v1/messages?beta=true", "/anthropic/v1/messages/",
		"/v1/responses/compact?x", "/v1/completions#",
	} {
		r := x.do(call{path: p, key: "sk-route", body: chatBody("hello", 100), chunks: []string{chatResponse(1, 1)}})
		require.Equal(t, 200, r.status, p)
		require.True(t, metered(r), "%s must be metered", p)
	}
}

// Paths that are not generation routes stay unmetered (prefix matches would
// charge /v1/messages/count_tokens and similar).
func TestNearMissPathsAreNotRoutes(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	for _, p := range []string{"/v1/messages/count_tokens", "/v1/chat/completionsX", "/v1/chat", "/v1/chat/completions.json",
		"/x/v1/chat/completions", "/v1/models?/v1/chat/completions", "/", "*", "/v1/chat/completions/x"} {
		r := x.do(call{path: p, key: "sk-route", body: chatBody("hello", 100), chunks: []string{chatResponse(1, 1)}})
		require.Equal(t, 200, r.status, p)
		require.False(t, metered(r), "%q is not a generation route", p)
	}
	require.Empty(t, x.h.Traps())
}

// --- 2. Identity ------------------------------------------------------------

// Scheme casing and whitespace do not give the same key a fresh bucket.
func TestBearerCasingAndWhitespaceNameTheSameBucket(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	var last int64 = 10000
	for _, v := range []string{"Bearer sk-same", "bearer sk-same", "BEARER sk-same", "Bearer   sk-same  ",
		"  Bearer\tsk-same", "bEaReR sk-same\t"} {
		r := x.do(call{headers: host.Headers{{"authorization", v}}, body: chatBody("hello", 500),
			chunks: []string{chatResponse(0, 0)}})
		require.True(t, metered(r), "%q", v)
		rem := atoi(t, r.header("x-ratelimit-tokens-remaining"))
		require.Less(t, rem, int64(10000), "%q", v)
		// every spelling sees the same bucket: settled at 0, so each probe
		// shows the same remaining (capacity minus its own hold).
		if last != 10000 {
			require.Equal(t, last, rem, "%q opened a different bucket", v)
		}
		last = rem
		x.h.Tick() // the next spelling runs on the other worker: the refund reaches it on the tick
	}
}

// authorization is tried first; a non-Bearer scheme falls through to
// x-api-key rather than naming a key.
func TestAKeyHeaderOrderAndNonBearerSchemes(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	spend := func(h host.Headers) reply {
		return x.do(call{headers: h, body: chatBody("hello", 100), chunks: []string{chatResponse(3000, 0)}})
	}
	// Spend 6000 on sk-x through x-api-key behind a Basic authorization.
	spend(host.Headers{{"authorization", "Basic dXNlcjpwYXNz"}, {"x-api-key", "sk-x"}})
	spend(host.Headers{{"authorization", "Bearer"}, {"x-api-key", "sk-x"}})
	r := x.do(call{headers: host.Headers{{"x-api-key", " sk-x "}}, body: chatBody("hello", 100), chunks: []string{chatResponse(0, 0)}})
	rem := atoi(t, r.header("x-ratelimit-tokens-remaining"))
	require.Less(t, rem, int64(4000+1), "Basic and an empty Bearer fall through to x-api-key: the same bucket")
	// Two different keys: which one a backend authenticates with depends on
	// the backend, so the request is refused rather than guessed.
	r = x.do(call{headers: host.Headers{{"authorization", "Bearer sk-y"}, {"x-api-key", "sk-x"}},
		body: chatBody("hello", 100), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 400, r.status)
	// The same key in both headers is one caller.
	r = x.do(call{headers: host.Headers{{"authorization", "Bearer sk-x"}, {"x-api-key", "sk-x"}},
		body: chatBody("hello", 100), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 200, r.status)
	require.Less(t, atoi(t, r.header("x-ratelimit-tokens-remaining")), int64(4000+1))
}

// bucketKey is the shared-data key of a raw API key's minute/day token
// bucket under cfg, built by the same planner the filter runs.
func bucketKey(t testing.TB, cfg, raw string) string {
	t.Helper()
	rt, _, err := config.Load([]byte(cfg))
	require.NoError(t, err)
	h := identity.HashKey(raw)
	plan, _ := budget.Plan(rt, budget.Identity{APIKeyHash: h, Key: rt.Key(h)}, 10)
	require.NotEmpty(t, plan.Tokens)
	return plan.Tokens[0].Key
}

// Hostile keys (huge, NUL, invalid UTF-8, quotes, pipes) are metered under
// their hash and never appear raw in a log line, a metric name or a
// shared-data key.
func TestHostileKeysAreHashedEverywhere(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	keys := []string{
		"sk-" + strings.Repeat("A", 64<<10),
		"sk-nul\x00inside",
		"sk-\xff\xfe-not-utf8",
		`sk-"quoted"\and|piped|tb|t|global`,
		"sk-secret-visible-123",
	}
	for _, k := range keys {
		r := x.do(call{headers: host.Headers{{"authorization", "Bearer " + k}}, body: chatBody("hello", 100),
			chunks: []string{chatResponse(1, 1)}})
		require.Equal(t, 200, r.status)
		require.True(t, metered(r))
		bk := bucketKey(t, keyBudgetConfig, strings.TrimSpace(k))
		_, _, found := x.h.SharedData(bk)
		require.True(t, found, "the bucket lives under the key's hash")
		require.NotContains(t, bk, k)
		_, _, found = x.h.SharedData(strings.Replace(bk, identity.HashKey(strings.TrimSpace(k)), k, 1))
		require.False(t, found)
	}
	// Refusals and a 503 also log: drive a refusal per key.
	for _, k := range keys {
		x.do(call{headers: host.Headers{{"x-api-key", k}}, body: chatBody("hello", 50000)})
	}
	x.h.Tick()
	prom := x.h.PrometheusText()
	for _, k := range keys {
		probe := k[:min(len(k), 24)]
		require.NotContains(t, prom, probe)
		for _, l := range x.h.Logs() {
			require.NotContains(t, l.Message, probe)
		}
	}
	require.Empty(t, x.h.Traps())
}

// --- 3. Body tricks -----------------------------------------------------------

// Every spelling of an output ceiling a pydantic backend coerces reserves at
// least that ceiling; non-ceilings reserve the default.
func TestOutputCeilingSpellingsReserveWhatTheBackendWillGenerate(t *testing.T) {
	cfg := streamCfg(false, false) // 100000 per minute, default output 4096
	x := newHarness(t, cfg)
	// The input estimate: what a one-token ceiling reserves, less the token.
	base := reservedBy(t, x.do(call{key: "sk-base", body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"max_tokens":1}`,
		chunks: []string{chatResponse(0, 0)}})) - 1
	rt, _, err := config.Load([]byte(cfg))
	require.NoError(t, err)
	def := rt.DefaultOutputTokens
	cases := []struct {
		field string
		want  int64
	}{
		{`5000`, 5000}, {`"5000"`, 5000}, {`" 5000 "`, 5000}, {`5e3`, 5000}, {`5000.0`, 5000}, {`4999.2`, 5000},
		{`"5_000"`, 5000}, {`0.5e4`, 5000},
		{`null`, def}, {`-1`, def}, {`0`, def}, {`"0"`, def}, {`"abc"`, def}, {`true`, def}, {`[5000]`, def}, {`{"v":5000}`, def},
	}
	for i, c := range cases {
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"max_tokens":` + c.field + `}`
		r := x.do(call{key: "sk-c" + itoa(i), body: body, chunks: []string{chatResponse(0, 0)}})
		require.Equal(t, 200, r.status, c.field)
		require.InDelta(t, base+c.want, reservedBy(t, r), 1, c.field)
	}
	// Absurd ceilings saturate instead of falling back to the default: refused.
	for _, f := range []string{`1e400`, `"1e400"`, `99999999999999999999`, `1e7`} {
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"max_tokens":` + f + `}`
		require.Equal(t, 429, x.do(call{key: "sk-huge", body: body}).status, f)
	}
}

// Repeated members: backends disagree on which copy they read, so a
// repeated member that decides metering or limits is refused in every mode
// (the estimate package pins every member and spelling; these cross the
// ABI), and escaped names are read decoded.
func TestRepeatedMembersCannotShrinkTheHoldOrSwapTheModel(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "token_budget":{"default_output_tokens":500},
	  "models":{"gpt-4o":{"max_tokens_per_request":1000,"on_max_tokens":"refuse"}}}`
	x := newHarness(t, cfg)
	for body, field := range map[string]string{
		`{"model":"gpt-4o","messages":[],"max_tokens":10,"max_tokens":5000}`:    "max_tokens",
		`{"model":"gpt-4o","messages":[],"max_tokens":5000,"max_tokens":10}`:    "max_tokens",
		`{"model":"other","model":"gpt-4o","messages":[],"max_tokens":5000}`:    "model",
		`{"model":"gpt-4o","model":"other","messages":[],"max_tokens":5000}`:    "model",
		`{"model":"gpt-4o","m\u006fdel":"other","messages":[],"max_tokens":10}`: "model",
	} {
		r := x.do(call{key: "sk-dup", body: body, chunks: []string{chatResponse(1, 1)}})
		require.Equal(t, 400, r.status, body)
		require.Equal(t, "duplicate_field", r.json(t)["error"].(map[string]any)["code"], body)
		require.Equal(t, field, r.json(t)["error"].(map[string]any)["param"], body)
	}
	// Distinct ceiling fields are no repeat: the largest is the one limited.
	for _, body := range []string{
		`{"model":"gpt-4o","messages":[],"max_tokens":10,"max_completion_tokens":5000}`,
		`{"model":"gpt-4o","messages":[],"max\u005ftokens":5000}`,
		`{"mod\u0065l":"gpt-4o","messages":[],"max_tokens":5000}`,
	} {
		r := x.do(call{key: "sk-dup", body: body})
		require.Equal(t, 400, r.status, body)
		require.Equal(t, "max_tokens_exceeded", r.json(t)["error"].(map[string]any)["code"], body)
	}
}

// A request body cut into many chunks is read whole once: the same hold and
// the same forwarded bytes as one chunk.
func TestABodyInManyChunksReservesLikeOneChunk(t *testing.T) {
	cfg := streamCfg(true, false)
	x := newHarness(t, cfg)
	body := streamBody(3000, false)
	one := x.exchange(exchange{headers: bearer("sk-one"), parts: []string{body}, ct: "text/event-stream",
		respParts: [][]byte{[]byte(openAIUsageChunk(0, 0) + done)}})
	var parts []string
	for i := 0; i < len(body); i += 3 {
		parts = append(parts, body[i:min(i+3, len(body))])
	}
	parts = append(parts, "") // an empty end-of-stream chunk
	many := x.exchange(exchange{headers: bearer("sk-many"), parts: parts, ct: "text/event-stream",
		respParts: [][]byte{[]byte(openAIUsageChunk(0, 0) + done)}})
	require.Equal(t, host.Continue, one.req.Action)
	require.Equal(t, host.Continue, many.req.Action)
	require.Equal(t, string(one.upstream), string(many.upstream), "the same rewrite")
	lim := func(e exchanged) string { v, _ := e.respHdrs.Get("x-ratelimit-tokens-remaining"); return v }
	require.Equal(t, lim(one), lim(many))
	require.NotEmpty(t, lim(one))
}

// max_body_bytes is inclusive: a body of exactly that size is estimated;
// one byte more, whole or in chunks, is refused with a 413 naming the
// setting (on_unreadable_body "refuse", the default).
func TestTheBodyLimitBoundaryIsExact(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "token_budget":{"max_body_bytes":4096}}`
	x := newHarness(t, cfg)
	pad := func(n int) string {
		b := chatBody("", 100)
		return strings.Replace(b, `"content":""`, `"content":"`+strings.Repeat("a", n-len(b))+`"`, 1)
	}
	at, over := pad(4096), pad(4097)
	require.Len(t, at, 4096)
	require.Len(t, over, 4097)
	r := x.do(call{key: "sk-at", body: at, chunks: []string{chatResponse(1, 1)}})
	require.True(t, metered(r))
	for _, chunked := range []bool{false, true} {
		parts := []string{over}
		if chunked {
			parts = []string{over[:4000], over[4000:]}
		}
		e := x.exchange(exchange{headers: bearer("sk-over-" + itoa(len(parts))), parts: parts, respParts: [][]byte{[]byte(chatResponse(1, 1))}})
		require.Equal(t, host.LocalReply, e.req.Action, "chunked %v: nothing goes upstream", chunked)
		require.Equal(t, 413, e.req.Local.Status)
		require.Contains(t, string(e.req.Local.Body), "token_budget.max_body_bytes (4096 bytes)")
		retry, _ := e.req.Local.Headers.Get("x-should-retry")
		require.Equal(t, "false", retry)
	}
	require.Zero(t, x.metric(metrics.FailOpen, metrics.LabelReason, "body_too_large"))
}

// A headers-only request is admitted without a hold (the backend rejects
// it) and counted as fail-open; an empty body is not JSON: refused by
// default, admitted on its (zero) bytes and the default output under
// on_unreadable_body "admit". Neither costs anything once the backend
// refuses it.
func TestEmptyBodiesHoldNothing(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	e := x.exchange(exchange{headers: bearer("sk-e"), respParts: [][]byte{[]byte(`{"error":{}}`)}, status: 400})
	require.Equal(t, host.Continue, e.req.Action)
	e = x.exchange(exchange{headers: bearer("sk-e"), parts: []string{""}, respParts: [][]byte{[]byte(`{"error":{}}`)}, status: 400})
	require.NotEqual(t, host.Continue, e.req.Action, "an empty body is refused")
	require.Equal(t, int64(1), x.metric(metrics.FailOpen, metrics.LabelReason, "no_body"))
	require.Zero(t, x.metric(metrics.FailOpen, metrics.LabelReason, "not_json"))
	require.Equal(t, int64(10000), x.level(t, "sk-e", probeReserve(t, keyBudgetConfig)))

	admit := strings.TrimSuffix(keyBudgetConfig, "}") + `,"token_budget":{"on_unreadable_body":"admit"}}`
	x = newHarness(t, admit)
	e = x.exchange(exchange{headers: bearer("sk-e"), parts: []string{""}, respParts: [][]byte{[]byte(`{"error":{}}`)}, status: 400})
	require.Equal(t, host.Continue, e.req.Action)
	require.Equal(t, int64(1), x.metric(metrics.FailOpen, metrics.LabelReason, "not_json"))
	require.Equal(t, int64(10000), x.level(t, "sk-e", probeReserve(t, admit)))
}

// Deeply nested junk the backend accepts does not turn the request into an
// unparsed, unmetered one; past encoding/json's own limit it may.
func TestDeepJunkIsStillEstimated(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	junk := strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat(`}`, 5000)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":100,"junk":` + junk + `}`
	r := x.do(call{key: "sk-deep", body: body, chunks: []string{chatResponse(1, 1)}})
	require.True(t, metered(r))
	arr := strings.Repeat(`[`, 9000) + strings.Repeat(`]`, 9000)
	body = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":100,"junk":` + arr + `}`
	r = x.do(call{key: "sk-deep", body: body, chunks: []string{chatResponse(1, 1)}})
	require.True(t, metered(r))
	require.Empty(t, x.h.Traps())
}

// A content-type that lies does not switch metering off: the filter reads
// the body, not the label.
func TestAContentTypeLieIsStillMetered(t *testing.T) {
	x := newHarness(t, keyBudgetConfig)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "", "application/json; charset=utf-16"} {
		r := x.do(call{key: "sk-ct", headers: host.Headers{{"content-type", ct}}, body: chatBody("hello", 100),
			chunks: []string{chatResponse(1, 1)}})
		require.True(t, metered(r), ct)
	}
}

// --- 4. Response tricks ---------------------------------------------------------

// Usage counters that are not counts never settle: the hold is released (a
// backend bug, not a client's lever). Huge counters are charged, capped.
func TestUnreadableUsageCountersReleaseAndHugeOnesCharge(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	bad := []string{
		`{"usage":{"prompt_tokens":-5,"completion_tokens":10}}`,
		`{"usage":{"prompt_tokens":"x","completion_tokens":10}}`,
		`{"usage":{"prompt_tokens":1.5,"completion_tokens":10}}`,
		`{"usage":{"prompt_tokens":null,"completion_tokens":10}}`,
		`{"usage":[1,2]}`,
		`{"usage":{"prompt_tokens":10}}`,
	}
	for i, b := range bad {
		k := "sk-bad" + itoa(i)
		x.do(call{key: k, body: chatBody("hi", 1000), chunks: []string{b}})
		require.Equal(t, int64(100000), x.level(t, k, probe), b)
	}
	// Numeric strings are counts.
	x.do(call{key: "sk-str", body: chatBody("hi", 1000), chunks: []string{`{"usage":{"prompt_tokens":"30","completion_tokens":12}}`}})
	require.Equal(t, int64(100000-42), x.level(t, "sk-str", probe))
	// A usage far beyond the bucket is an overage it cannot cover; it never
	// wraps into a refund. Under on_uncovered_overage "debt" (the default)
	// it is charged, so the key is refused; under "skip" the hold stays
	// charged and the overage consumes nothing (the seed's rule).
	huge := call{key: "sk-huge", body: chatBody("hi", 1000), chunks: []string{`{"usage":{"prompt_tokens":1e30,"completion_tokens":99999999999999999999}}`}}
	require.Equal(t, 200, x.do(huge).status)
	r := x.do(call{key: "sk-huge", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 429, r.status, "the debt refuses the key")
	require.Equal(t, "0", r.header("x-ratelimit-tokens-remaining"))
	require.Empty(t, x.h.Traps())

	skip := strings.Replace(cfg, `"token_budget": {`, `"token_budget": { "on_uncovered_overage": "skip",`, 1)
	require.NotEqual(t, cfg, skip)
	xs := newHarness(t, skip) // same vm_id, so the same shared data: another key
	huge.key = "sk-huge-skip"
	r = xs.do(huge)
	require.Equal(t, 100000-reservedBy(t, r), xs.level(t, "sk-huge-skip", probe))
	require.Empty(t, xs.h.Traps())
}

// A second usage block in a stream replaces the first (servers that report
// usage on every chunk report it cumulatively).
func TestAStreamSettlesItsLastUsageBlock(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	x.do(call{key: "sk-twice", body: streamBody(1000, true), contentType: "text/event-stream",
		chunks: []string{openAIUsageChunk(5, 1) + openAIChunk("hi") + openAIUsageChunk(40, 2) + done}})
	require.Equal(t, int64(100000-42), x.level(t, "sk-twice", probe))
}

// Answers whose shape does not match the request still settle on what was
// reported; a stream that never reaches its end releases.
func TestMismatchedAnswerShapes(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)

	// stream:true answered with plain JSON: settled from the JSON usage.
	x.do(call{key: "sk-json", body: streamBody(1000, false), chunks: []string{chatResponse(20, 5)}})
	require.Equal(t, int64(100000-25), x.level(t, "sk-json", probe))

	// A non-stream request answered with SSE: settled on the estimate plus
	// the deltas seen (no usage block), never free and never the whole hold.
	r := x.do(call{key: "sk-sse", body: chatBody("hello", 3000), contentType: "text/event-stream",
		chunks: []string{openAIChunk("one two three") + done}})
	held := reservedBy(t, r)
	lvl := x.level(t, "sk-sse", probe)
	require.Less(t, lvl, int64(100000))
	require.Greater(t, lvl, 100000-held)

	// An error event before [DONE]: completed, no usage: estimate + deltas.
	x.do(call{key: "sk-err", body: streamBody(3000, false), contentType: "text/event-stream",
		chunks: []string{openAIChunk("a") + `data: {"error":{"message":"boom","type":"server_error"}}` + "\n\n" + done}})
	lvl = x.level(t, "sk-err", probe)
	require.Less(t, lvl, int64(100000))
	require.Greater(t, lvl, int64(100000-3000))

	// [DONE] first, usage after it: the usage still counts at the end.
	x.do(call{key: "sk-late", body: streamBody(1000, true), contentType: "text/event-stream",
		chunks: []string{openAIChunk("a") + done + openAIUsageChunk(7, 3)}})
	require.Equal(t, int64(100000-10), x.level(t, "sk-late", probe))

	// A 2xx status with an error body: no usage, released.
	x.do(call{key: "sk-2xxerr", body: chatBody("hi", 1000), chunks: []string{`{"error":{"message":"overloaded"}}`}})
	require.Equal(t, int64(100000), x.level(t, "sk-2xxerr", probe))

	// SSE lines split across chunks at every byte with CRLF framing.
	sse := strings.ReplaceAll(openAIChunk("x")+openAIUsageChunk(11, 4)+done, "\n", "\r\n")
	for i := 0; i <= len(sse); i += 7 {
		k := "sk-crlf" + itoa(i)
		x.do(call{key: k, body: streamBody(1000, true), contentType: "text/event-stream", chunks: splitAt(sse, i)})
		require.Equal(t, int64(100000-15), x.level(t, k, probe), "split at %d", i)
	}
	require.Empty(t, x.h.Traps())
}

// --- 5. Leaks -----------------------------------------------------------------------

// After a mix of attacks, the caller's bucket is exactly capacity minus what
// settled, no shared bucket's level shows in any header or body, and
// nothing trapped.
func TestAfterTheAttacksEveryLevelIsExplainedAndNoSharedLevelLeaks(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":50000},"per_user":{"tokens_per_minute":40000},
	  "per_api_key":{"tokens_per_minute":30000}},"budget_division":{"replicas":1}},
	  "api_keys":[{"key":"sk-a","id":"a","user":"u1"}],"token_budget":{"inject_stream_usage":true,"on_unreadable_body":"admit"}}`
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	var settled int64
	attacks := []call{
		{body: "\xef\xbb\xbf" + chatBody("hi", 100)},                       // unread: held on its bytes, an empty answer releases it
		{body: `{"model":"gpt-4o","messages":[],"max_tokens":100}garbage`}, // the same
		{body: chatBody("hi", 500), status: 500, chunks: []string{`{"usage":{"prompt_tokens":1,"completion_tokens":1}}`}},
		{body: streamBody(500, false), contentType: "text/event-stream", chunks: []string{openAIChunk("a")}, cut: true},
		{body: chatBody("hi", 500), chunks: []string{chatResponse(7, 3)}},                                                  // settles 10
		{body: streamBody(500, false), contentType: "text/event-stream", chunks: []string{openAIUsageChunk(20, 5) + done}}, // 25
		{body: chatBody("hi", 900000)}, // refused
		{body: chatBody("hi", 100), respHeaders: host.Headers{{"content-encoding", "identity"}}, chunks: []string{chatResponse(1, 1)}}, // 2
	}
	// The cut stream is charged what it delivered: its input and one delta.
	settled = 10 + 25 + 2 + inputOf(t, attacks[3].body) + estimate.Text([]byte("a"))
	for _, c := range attacks {
		c.key = "sk-a"
		r := x.do(c)
		for _, h := range r.headers {
			if strings.HasPrefix(h[0], "x-ratelimit-tokens") && h[0] != "x-ratelimit-tokens-reset" && h[0] != "x-ratelimit-tokens-day-reset" {
				// Only the API key's own capacities may show: 30000 or less.
				if strings.HasSuffix(h[0], "-limit") {
					require.Equal(t, "30000", h[1], h[0])
				}
			}
		}
		body := string(r.body)
		require.NotContains(t, body, "50000")
		require.NotContains(t, body, "40000")
		if r.local {
			d := details(t, r)
			if d["token_dimension"] != "api_key" {
				require.NotContains(t, d, "remaining")
				require.NotContains(t, d, "capacity")
			}
		}
	}
	require.Equal(t, 30000-settled, x.level(t, "sk-a", probe))
	// A request one token larger than what is left is refused by the key's
	// own bucket (global and user have more room), with its own level.
	r := x.do(call{key: "sk-a", body: chatBody("hello", int(30000-settled-(probe-10))+1)})
	require.Equal(t, 429, r.status)
	require.Equal(t, "api_key", details(t, r)["token_dimension"])
	r = x.do(call{key: "sk-a", body: chatBody("hello", int(30000-settled-(probe-10))), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 200, r.status, "exactly what is left fits")
	require.Equal(t, "0", r.header("x-ratelimit-tokens-remaining"))
	require.Empty(t, x.h.Traps())
}

// The injected include_usage rewrite keeps a client's own stream_options
// members and never produces invalid JSON, whatever the client sent.
func TestTheInjectionRewriteAlwaysForwardsValidJSON(t *testing.T) {
	x := newHarness(t, streamCfg(true, false))
	for _, body := range []string{
		`{"model":"gpt-4o","stream":true,"messages":[]}`,
		`{"model":"gpt-4o","stream":true,"messages":[],"stream_options":null}`,
		`{"model":"gpt-4o","stream":true,"messages":[],"stream_options":{}}`,
		`{"model":"gpt-4o","stream":true,"messages":[],"stream_options":{"include_usage":false,"x":1}}`,
		`{"model":"gpt-4o","stream":true,"messages":[],"stream_options":{"include_usage":"no"}}`,
		` { "stream" : true , "messages" : [ ] } `,
		`{"stream":true}`,
	} {
		r := x.do(call{key: "sk-inj", body: body, contentType: "text/event-stream", chunks: []string{openAIUsageChunk(1, 1) + done}})
		require.Equal(t, 200, r.status, body)
		require.True(t, json.Valid(r.upstreamBody), "%s -> %s", body, r.upstreamBody)
		var m map[string]any
		require.NoError(t, json.Unmarshal(r.upstreamBody, &m))
		so, _ := m["stream_options"].(map[string]any)
		require.Equal(t, true, so["include_usage"], "%s -> %s", body, r.upstreamBody)
	}
}
