package wasmtest

// What the request body says about its own ceiling: repeated members.

import (
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
