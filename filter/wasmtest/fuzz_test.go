package wasmtest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// fuzzConfig turns on every body-reading path: estimation on every route,
// include_usage injection, a clamping model (so bodies may be rewritten on
// every route), trusted identity headers, all six dimensions, a model image
// limit, and spend limits on a user and a team the trusted headers name.
const fuzzConfig = `{
  "rate_limiting": {
    "limits": {
      "global": { "tokens_per_minute": 5000000, "requests_per_second": 1000, "burst_capacity": 1000 },
      "per_client": { "tokens_per_minute": 2000000 },
      "per_api_key": { "tokens_per_minute": 200000, "tokens_per_day": 5000000, "requests_per_minute": 600, "concurrent_requests": 4 },
      "per_user": { "tokens_per_minute": 300000 },
      "per_team": { "tokens_per_minute": 400000 }
    },
    "budget_division": { "replicas": 1 }
  },
  "identity": { "trusted_user_header": "x-auth-user", "trusted_team_header": "x-auth-team", "model_header": "x-model" },
  "token_budget": { "inject_stream_usage": true, "max_body_bytes": 65536, "default_output_tokens": 500 },
  "models": { "gpt-4o": { "max_tokens_per_request": 1000, "max_context_length": 50000, "on_max_tokens": "clamp", "max_images_per_request": 3 },
              "claude": { "max_tokens_per_request": 2000, "on_max_tokens": "refuse" } },
  "pricing": { "gpt-4o": { "input": "2.50", "cached_input": "1.25", "output": 10 }, "default": { "input": 1, "output": 2, "per_request": "0.000001" } },
  "spend_limits": { "users": { "alice": { "day_usd": "0.50", "month_usd": 0 } }, "teams": { "red": { "month_usd": "100" } } }
}`

var fuzzPaths = []string{
	"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/responses/compact", "/v1/messages",
	"/anthropic/v1/messages", "/v1/chat/completions/?x=1", "/v1/messages?beta=true", "/v1/models",
}

var fuzzContentTypes = []string{"application/json", "text/event-stream", "text/event-stream; charset=utf-8", "text/plain", ""}

// FuzzFilterNeverTraps feeds arbitrary request headers, bodies and response
// chunks through the compiled module in the Envoy-faithful host. Whatever
// arrives, the module must not trap, must not answer 5xx itself, and a JSON
// body it rewrites must stay valid JSON. One host serves every iteration of
// a fuzz worker, so buckets, holds and metric ids accumulate as in a
// long-running proxy.
func FuzzFilterNeverTraps(f *testing.F) {
	seed := func(path uint8, key, extra, body string, status uint16, ct uint8, resp string, split uint16, cut bool) {
		f.Add(path, key, extra, []byte(body), status, ct, []byte(resp), split, cut)
	}
	chat := chatBody("hello", 100)
	stream := streamBody(300, false)
	sse := openAIChunk("Once") + openAIUsageChunk(40, 2) + done
	seed(0, "sk-a", "", chat, 200, 0, chatResponse(10, 5), 7, false)
	seed(0, "sk-a", "", stream, 200, 1, sse, 33, false)
	seed(0, "sk-a", "", stream, 200, 2, strings.ReplaceAll(sse, "\n", "\r\n"), 100, true)
	seed(0, "sk-b", "x-auth-user: alice", "\xef\xbb\xbf"+chat, 200, 0, chatResponse(1, 1), 0, false)
	seed(0, "sk-b", "x-auth-team: red", stream, 200, 1, sse, 40, true)
	seed(0, "sk-b", "", strings.Replace(chat, "{", `{"x":NaN,`, 1), 200, 0, chatResponse(1, 1), 0, false)
	seed(0, "", "x-api-key: sk-c", chat+`{"junk":1}`, 200, 0, chatResponse(1, 1), 0, false)
	seed(0, "sk-c", "", `{"model":"gpt-4o","messages":[],"max_tokens":10,"max\u005ftokens":99999}`, 200, 0, chatResponse(1, 1), 0, false)
	seed(0, "sk-c", "", `{"model":"gpt-4o","stream":true,"messages":[],"stream_options":{},"stream_options":{}}`, 200, 1, sse, 5, false)
	seed(0, "sk-d", "", `{"model":"gpt-4o","max_tokens":"1e400","n":"7","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 200, 0, chatResponse(1, 1), 0, false)
	seed(0, "sk-d", "", `{"model":"gpt-4o","messages":[],"max_tokens":null,"stream":"true"}`, 500, 0, `{"error":{}}`, 0, false)
	seed(0, "sk-d", "", chat, 200, 0, `{"usage":{"prompt_tokens":-5,"completion_tokens":"1e30"}}`, 3, false)
	seed(2, "sk-e", "", `{"model":"gpt-4o","input":"hi","stream":true,"max_output_tokens":2000}`, 200, 1,
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":20,\"output_tokens\":9}}}\n\n", 40, false)
	seed(4, "sk-f", "", `{"model":"claude","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 200, 1,
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":30,\"output_tokens\":1}}}\n\nevent: error\ndata: {\"type\":\"error\"}\n\n", 17, false)
	seed(4, "sk-f", "", `{"model":"claude","max_tokens":99999,"messages":[]}`, 200, 0, `{}`, 0, false)
	seed(0, "sk-g", "content-type: text/plain", strings.Repeat(`{"a":`, 3000)+"1"+strings.Repeat("}", 3000), 200, 0, "", 0, false)
	seed(0, "\x00\xff", "authorization: bearer\t \x00", "", 200, 3, "data: [DONE]\n\n", 1, false)
	seed(8, "sk-h", "", chat, 200, 4, chatResponse(1, 1), 2, false)

	x := newHarness(f, fuzzConfig)
	f.Fuzz(func(t *testing.T, path uint8, key, extra string, body []byte, status uint16, ct uint8, resp []byte, split uint16, cut bool) {
		x.clock.Advance(time.Minute) // refill, so later iterations still reach upstream
		hs := host.Headers{{":method", "POST"}, {":path", fuzzPaths[int(path)%len(fuzzPaths)]}, {":authority", "llm"},
			{":scheme", "http"}, {"content-type", "application/json"}}
		if key != "" {
			hs = append(hs, [2]string{"authorization", "Bearer " + key})
		}
		if name, value, ok := strings.Cut(extra, ":"); ok {
			hs = append(hs, [2]string{strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)})
		}
		traps := len(x.h.Traps())
		s := x.h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.1.2.3:40000"})
		defer s.Done()
		res := s.RequestHeaders(hs, len(body) == 0)
		var upstream []byte
		if len(body) > 0 && res.Action != host.LocalReply {
			cutAt := int(split) % (len(body) + 1)
			res = s.RequestBody(body[:cutAt], false)
			upstream = append(upstream, res.Body...)
			if res.Action != host.LocalReply {
				res = s.RequestBody(body[cutAt:], true)
				upstream = append(upstream, res.Body...)
			}
			if res.Action == host.Pause {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res = s.Wait(ctx)
				cancel()
				upstream = append(upstream, res.Body...)
			}
		}
		if n := len(x.h.Traps()); n != traps {
			t.Fatalf("the module trapped on the request: %v", x.h.Traps()[traps:])
		}
		switch res.Action {
		case host.LocalReply:
			if res.Local == nil || (res.Local.Status != 400 && res.Local.Status != 429) {
				t.Fatalf("the filter answered %+v; only 400 and 429 are its own", res.Local)
			}
			return
		case host.Continue:
		default:
			t.Fatalf("request ended with %v", res.Action)
		}
		if json.Valid(body) && len(upstream) > 0 && !json.Valid(upstream) {
			t.Fatalf("a valid JSON body was forwarded invalid:\n%q\n->\n%q", body, upstream)
		}
		code := 100 + int(status)%500
		rh := host.Headers{{":status", itoa(code)}, {"content-type", fuzzContentTypes[int(ct)%len(fuzzContentTypes)]}}
		s.ResponseHeaders(rh, len(resp) == 0)
		if len(resp) > 0 {
			cutAt := int(split) % (len(resp) + 1)
			s.ResponseBody(resp[:cutAt], false)
			s.ResponseBody(resp[cutAt:], !cut)
		}
		if n := len(x.h.Traps()); n != traps {
			t.Fatalf("the module trapped on the response: %v", x.h.Traps()[traps:])
		}
	})
}
