package wasmtest

// What the request body says about its own ceiling: repeated members,
// ceilings at or below zero, and the clamp writing the model's limit.

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every mode a request can be metered in: no model rules, a model that
// refuses, a model that clamps, stream-usage injection, and a config with
// only request-count limits.
var memberModes = map[string]string{
	"no model rules": `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}}}`,
	"refuse": `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "token_budget":{"default_output_tokens":500},"models":{"gpt-4o":{"max_tokens_per_request":1000,"on_max_tokens":"refuse"}}}`,
	"clamp": `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "models":{"gpt-4o":{"max_tokens_per_request":1000,"on_max_tokens":"clamp"}}}`,
	"inject stream usage": `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "token_budget":{"inject_stream_usage":true}}`,
	"request counts only": `{"rate_limiting":{"limits":{"per_api_key":{"requests_per_minute":100}},"budget_division":{"replicas":1}}}`,
}

// requireDuplicate checks a local 400 duplicate_field naming field, with
// nothing forwarded.
func requireDuplicate(t *testing.T, r reply, field, msg string) {
	t.Helper()
	require.Equal(t, 400, r.status, msg)
	require.True(t, r.local, "answered by the filter, never forwarded: %s", msg)
	e := r.json(t)["error"].(map[string]any)
	require.Equal(t, "duplicate_field", e["code"], msg)
	require.Equal(t, "invalid_request_error", e["type"], msg)
	require.Equal(t, field, e["param"], msg)
	require.Contains(t, e["message"], `"`+field+`"`, msg)
}

func TestARepeatedModelMemberIsRefusedInEveryMode(t *testing.T) {
	for mode, cfg := range memberModes {
		x := newHarness(t, cfg)
		for _, body := range []string{
			`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"model":"other"}`,
			`{"model":"other","messages":[{"role":"user","content":"hi"}],"model":"gpt-4o","max_tokens":5000}`,
			`{"model":"gpt-4o","m\u006fdel":"gpt-4o","messages":[]}`,
			`{"\u006d\u006f\u0064\u0065\u006c":"a","messages":[],"model":"b","stream":true}`,
		} {
			r := x.do(call{key: "sk-dup", body: body, chunks: []string{chatResponse(1, 1)}})
			requireDuplicate(t, r, "model", mode+": "+body)
		}
		// Nothing was taken: the key's next request sees a whole bucket.
		r := x.do(call{key: "sk-dup", body: chatBody("hi", 10), chunks: []string{chatResponse(0, 0)}})
		require.Equal(t, 200, r.status, mode)
		if metered(r) {
			require.Equal(t, "100000", r.header("x-ratelimit-tokens-limit"), mode)
		}
		// A repeated name inside a message decides nothing: served.
		r = x.do(call{key: "sk-nested", body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hi","model":"a","model":"b"}],"max_tokens":10}`,
			chunks: []string{chatResponse(1, 1)}})
		require.Equal(t, 200, r.status, mode)
	}
}

func TestEveryRepeatedMemberThatDecidesMeteringIsRefusedInEveryModeAndRoute(t *testing.T) {
	values := map[string][2]string{
		"max_tokens": {`10`, `100000`}, "max_completion_tokens": {`10`, `100000`}, "max_output_tokens": {`10`, `100000`},
		"n": {`1`, `8`}, "best_of": {`1`, `8`}, "stream": {`false`, `true`},
		"stream_options": {`{"include_usage":true}`, `{"include_usage":false}`},
	}
	for mode, cfg := range memberModes {
		x := newHarness(t, cfg)
		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages"} {
			for field, v := range values {
				body := `{"model":"gpt-4o","` + field + `":` + v[0] + `,"messages":[{"role":"user","content":"hi"}],"` + field + `":` + v[1] + `}`
				requireDuplicate(t, x.do(call{path: path, key: "sk-" + field, body: body}), field, mode+" "+path+": "+body)
				escaped := strings.Replace(body, `"`+field+`":`+v[1], `"\u00`+hexByte(field[0])+field[1:]+`":`+v[1], 1)
				requireDuplicate(t, x.do(call{path: path, key: "sk-" + field, body: escaped}), field, mode+" "+path+": "+escaped)
			}
		}
	}
}

func hexByte(c byte) string {
	const hex = "0123456789abcdef"
	return string([]byte{hex[c>>4], hex[c&15]})
}

// upstreamJSON decodes the body the filter forwarded.
func upstreamJSON(t *testing.T, r reply) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.upstreamBody, &m), string(r.upstreamBody))
	return m
}

// A ceiling of 0 or below is no ceiling (backends read 0 as "no limit"):
// it reserves what an absent one reserves, is not refused against the
// model's limit, and under clamp the backend is told the limit instead.
func TestAZeroMaxTokensReservesLikeAnAbsentCeiling(t *testing.T) {
	noCeiling := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`
	with := func(field, v string) string {
		return `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"` + field + `":` + v + `}`
	}
	zeros := []string{`0`, `-0`, `0.0`, `"0"`, `-1`, `-4096`, `"-5"`}
	for _, tc := range []struct {
		name, cfg string
		want      int64 // output reserved by an absent ceiling
	}{
		{"no model rules", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
		  "token_budget":{"default_output_tokens":3000}}`, 3000},
		{"refuse", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
		  "token_budget":{"default_output_tokens":500},"models":{"gpt-4o":{"max_tokens_per_request":1000,"on_max_tokens":"refuse"}}}`, 500},
		{"clamp", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
		  "token_budget":{"default_output_tokens":500},"models":{"gpt-4o":{"max_tokens_per_request":1000,"on_max_tokens":"clamp"}}}`, 1000},
	} {
		x := newHarness(t, tc.cfg)
		absent := ok(t, x, call{key: "sk-absent", body: noCeiling, chunks: []string{chatResponse(0, 0)}})
		one := ok(t, x, call{key: "sk-one", body: with("max_tokens", "1"), chunks: []string{chatResponse(0, 0)}})
		input := reservedBy(t, one) - 1
		require.Equal(t, input+tc.want, reservedBy(t, absent), tc.name)
		for i, z := range zeros {
			for _, field := range []string{"max_tokens", "max_completion_tokens"} {
				r := x.do(call{key: "sk-z" + itoa(i) + field, body: with(field, z), chunks: []string{chatResponse(0, 0)}})
				require.Equal(t, 200, r.status, "%s: %s %s is not refused as above the limit", tc.name, field, z)
				require.Equal(t, reservedBy(t, absent), reservedBy(t, r), "%s: %s %s", tc.name, field, z)
				if tc.name == "clamp" {
					require.Equal(t, float64(1000), upstreamJSON(t, r)[field], "%s: the backend is told the limit, not %s", tc.name, z)
				} else {
					require.Equal(t, with(field, z), string(r.upstreamBody), "%s: forwarded unchanged", tc.name)
				}
			}
		}
		// A zero beside a real ceiling: the real one is the ceiling, except
		// under clamp, where the zero becomes the limit and so reserves it.
		r := ok(t, x, call{key: "sk-mixed", body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"max_tokens":0,"max_completion_tokens":50}`,
			chunks: []string{chatResponse(0, 0)}})
		// The next case's harness (same vm_id, so the same shared data)
		// reads these keys again: their refunds reach shared data on the tick.
		x.h.Tick()
		if tc.name == "clamp" {
			require.Equal(t, input+1000, reservedBy(t, r), tc.name)
			up := upstreamJSON(t, r)
			require.Equal(t, float64(1000), up["max_tokens"])
			require.Equal(t, float64(50), up["max_completion_tokens"])
		} else {
			require.Equal(t, input+50, reservedBy(t, r), tc.name)
		}
	}
}

// perModelConfig is the shipped per-model example: claude-4-vision has a
// 4,096-token limit with on_max_tokens "clamp" and default_output_tokens
// equal to it.
func perModelConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../examples/configs/per-model.json")
	require.NoError(t, err)
	return string(b)
}

// Under clamp, a request that states no ceiling gets the route's own field
// with the model's limit, so the backend cannot generate past what was
// reserved, whatever default_output_tokens is.
func TestClampWritesTheModelLimitWhenTheRequestStatesNoCeiling(t *testing.T) {
	perModel := perModelConfig(t)
	below := strings.Replace(perModel, `"default_output_tokens": 4096`, `"default_output_tokens": 1000`, 1)
	require.NotEqual(t, perModel, below)
	for name, cfg := range map[string]string{"default at the limit": perModel, "default below the limit": below} {
		x := newHarness(t, cfg)
		for i, rt := range []struct{ path, body, field string }{
			{"/v1/messages", `{"model":"claude-4-vision","messages":[{"role":"user","content":"describe"}]}`, "max_tokens"},
			{"/v1/chat/completions", `{"model":"claude-4-vision","messages":[{"role":"user","content":"describe"}]}`, "max_tokens"},
			{"/v1/completions", `{"model":"claude-4-vision","prompt":"describe"}`, "max_tokens"},
			{"/v1/responses", `{"model":"claude-4-vision","input":"describe"}`, "max_output_tokens"},
			{"/v1/messages", `{"model":"claude-4-vision","messages":[{"role":"user","content":"describe"}],"max_tokens":0}`, "max_tokens"},
			{"/v1/messages", `{"model":"claude-4-vision","messages":[{"role":"user","content":"describe"}],"max_tokens":null}`, "max_tokens"},
		} {
			key := "sk-clamp-" + itoa(i)
			r := x.do(call{path: rt.path, key: key, body: rt.body})
			require.Equal(t, 200, r.status, "%s %s", name, rt.body)
			up := upstreamJSON(t, r)
			require.Equal(t, float64(4096), up[rt.field], "%s %s %s: the backend is told the limit", name, rt.path, rt.body)
			for _, other := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
				if other != rt.field {
					require.NotContains(t, up, other, "only the route's own field is added")
				}
			}
			// Everything else reaches the backend as the client sent it.
			var sent map[string]any
			require.NoError(t, json.Unmarshal([]byte(rt.body), &sent))
			delete(up, rt.field)
			delete(sent, rt.field)
			require.Equal(t, sent, up)
			// And the hold reserves the limit: the same body with the limit
			// stated explicitly reserves exactly as much.
			explicit := strings.Replace(strings.Replace(rt.body, `,"max_tokens":0`, ``, 1), `,"max_tokens":null`, ``, 1)
			explicit = strings.TrimSuffix(explicit, "}") + `,"` + rt.field + `":4096}`
			e := x.do(call{path: rt.path, key: key + "-explicit", body: explicit})
			require.Equal(t, 200, e.status)
			require.Equal(t, explicit, string(e.upstreamBody), "a ceiling within the limit is forwarded unchanged")
			require.Equal(t, reservedBy(t, e), reservedBy(t, r), "%s %s", name, rt.body)
		}
		// A ceiling within the limit stays the client's, and so does the hold.
		small := `{"model":"claude-4-vision","messages":[{"role":"user","content":"describe"}],"max_tokens":100}`
		r := x.do(call{path: "/v1/messages", key: "sk-small", body: small})
		require.Equal(t, small, string(r.upstreamBody))
		e := x.do(call{path: "/v1/messages", key: "sk-small-explicit", body: strings.Replace(small, `:100}`, `:4096}`, 1)})
		require.Equal(t, int64(4096-100), reservedBy(t, e)-reservedBy(t, r), name)
		// The next config's harness (same vm_id, so the same shared data)
		// reads these keys again: their refunds reach shared data on the tick.
		x.h.Tick()
	}
}

// Under clamp the backend must read the same ceiling the hold assumed, so a
// ceiling that is not a plain integer within the limit is replaced by it.
func TestClampReplacesEveryCeilingSpellingItCannotVouchFor(t *testing.T) {
	x := newHarness(t, perModelConfig(t))
	for i, v := range []string{`5000`, `"100"`, `" 100 "`, `100.5`, `"1e3"`, `true`, `[100]`, `{"v":1}`, `-1`, `0`, `1e400`} {
		body := `{"model":"claude-4-vision","messages":[{"role":"user","content":"x"}],"max_tokens":` + v + `}`
		r := x.do(call{path: "/v1/messages", key: "sk-sp-" + itoa(i), body: body})
		require.Equal(t, 200, r.status, v)
		require.Equal(t, strings.Replace(body, `:`+v+`}`, `:4096}`, 1), string(r.upstreamBody), v)
	}
}
