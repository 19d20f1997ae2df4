package wasmtest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
)

// The bodies the filter cannot read whole, through the compiled module:
// an answer of any size is charged the usage it reports, and a request
// body the filter cannot estimate is no free pass.

// hugeAnswerChunks is a chat completion of output "tok " tokens in 64 KiB
// chunks reporting prompt input tokens: past two million tokens it is
// larger than the 8 MiB the filter once copied.
func hugeAnswerChunks(prompt, output int) []string {
	body := `{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("tok ", output) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":` + strconv.Itoa(prompt) +
		`,"completion_tokens":` + strconv.Itoa(output) + `,"total_tokens":` + strconv.Itoa(prompt+output) + `}}`
	var chunks []string
	for len(body) > 0 {
		n := min(len(body), 64<<10)
		chunks, body = append(chunks, body[:n]), body[n:]
	}
	return chunks
}

// The figure: a 9.2 MB non-streamed answer reporting 2,300,005
// tokens was charged its hold, 4,104 tokens and $0.041. It is charged what
// it reported, in tokens and in dollars ($2.50 and $10 per million).
func TestAnAnswerLargerThanAnyBufferIsChargedItsReportedUsage(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":10000000}},"budget_division":{"replicas":1}},
	  "pricing":{"gpt-4o":{"input":"2.50","output":"10.00"}},
	  "api_keys":[{"key":"sk-big","id":"big","spend_limit_day_usd":1000}]}`
	probe := probeReserve(t, cfg)
	x := spendHarness(t, cfg)
	chunks := hugeAnswerChunks(5, 2_300_000)
	size := 0
	for _, c := range chunks {
		size += len(c)
	}
	require.Greater(t, size, 8<<20)
	r := x.do(call{key: "sk-big", body: chatBody("hi", 4096), chunks: chunks})
	require.Equal(t, 200, r.status)
	require.Equal(t, "settled", r.decision["end"])
	require.Equal(t, float64(2_300_005), r.decision["usage"])
	require.Equal(t, "23.0000125", r.decision["spend_usd"])
	require.Equal(t, int64(10_000_000-2_300_005), x.level(t, "sk-big", probe))
	require.Empty(t, x.h.Traps())
}

// An answer whose usage cannot be read is charged its hold plus an
// estimate of its bytes, never the hold alone: here a 9 MiB answer that is
// not JSON.
func TestAnAnswerWhoseUsageCannotBeReadIsChargedItsHoldAndItsBytes(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":10000000}},"budget_division":{"replicas":1}}}`
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	chunks := hugeAnswerChunks(5, 2_300_000)
	chunks[len(chunks)-1] = strings.TrimSuffix(chunks[len(chunks)-1], "}") // cut short: not JSON
	size := 0
	for _, c := range chunks {
		size += len(c)
	}
	r := x.do(call{key: "sk-junk", body: chatBody("hi", 4096), chunks: chunks})
	require.Equal(t, 200, r.status)
	held := reservedBy(t, r)
	require.Equal(t, float64(held+estimate.Bytes(int64(size))), r.decision["usage"])
	require.Equal(t, 10_000_000-held-estimate.Bytes(int64(size)), x.level(t, "sk-junk", probe))
}

// openBodies starts n requests with body on one key and leaves them in
// flight, as parallel clients do: each is admitted (its hold taken) or
// answered at once. It returns the statuses (200 for admitted) and ends the
// admitted ones with answer.
func openBodies(t *testing.T, x *harness, key, body string, n int, answer string) []int {
	t.Helper()
	var open []*host.Stream
	statuses := make([]int, n)
	for i := range statuses {
		s := x.h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.1.2.3:40000"})
		res := s.RequestHeaders(host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
			{":scheme", "http"}, {"content-type", "application/json"}, {"content-length", itoa(len(body))},
			{"authorization", "Bearer " + key}}, false)
		if res.Action != host.LocalReply {
			res = s.RequestBody([]byte(body), true)
		}
		if res.Action == host.Pause {
			ctx, cancel := context.WithTimeout(context.Background(), 10e9)
			res = s.Wait(ctx)
			cancel()
		}
		switch res.Action {
		case host.LocalReply:
			statuses[i] = res.Local.Status
			s.Done()
		case host.Continue:
			statuses[i] = 200
			open = append(open, s)
		default:
			t.Fatalf("request %d: %v", i, res.Action)
		}
	}
	for _, s := range open {
		s.ResponseHeaders(host.Headers{{":status", "200"}, {"content-type", "application/json"}}, false)
		s.ResponseBody([]byte(answer), true)
		s.Done()
	}
	return statuses
}

func count(statuses []int, status int) int {
	n := 0
	for _, s := range statuses {
		if s == status {
			n++
		}
	}
	return n
}

// The burst: 25 bodies over max_body_bytes at once on a 5,000
// tokens a minute key each took a zero hold, so all 25 were served 3,000
// tokens. By default each is refused with a 413; under
// on_unreadable_body "admit" each holds its bytes' estimate plus the
// default output, so one is in flight at a time.
func TestABurstOfBodiesTooLargeToEstimateIsHeldToTheBudget(t *testing.T) {
	const limits = `"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":5000}},"budget_division":{"replicas":1}}`
	body := chatBody(strings.Repeat("a ", 600), 3000) // 1.2 KB, over 1,024
	answer := chatResponse(10, 2990)

	x := newHarness(t, `{`+limits+`,"token_budget":{"max_body_bytes":1024}}`)
	statuses := openBodies(t, x, "sk-burst", body, 25, answer)
	require.Equal(t, 25, count(statuses, 413), "%v", statuses)

	x = newHarness(t, `{`+limits+`,"token_budget":{"max_body_bytes":1024,"on_unreadable_body":"admit"}}`)
	statuses = openBodies(t, x, "sk-burst", body, 25, answer)
	require.Equal(t, 1, count(statuses, 200), "%v", statuses)
	require.Equal(t, 24, count(statuses, 429), "%v", statuses)
	require.Empty(t, x.h.Traps())
}

// Under "admit", an unread body is held to the model header's limits: its
// max_tokens_per_request is reserved whole under clamp (the body's own
// ceiling cannot be read), so a 5,000-token key admits one at a time.
func TestUnderAdmitAnUnreadBodyTakesTheModelHeadersLimits(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "identity":{"model_header":"x-model"},"token_budget":{"max_body_bytes":1024,"on_unreadable_body":"admit"},
	  "models":{"gpt-4o":{"max_tokens_per_request":20000,"on_max_tokens":"clamp"}}}`)
	body := chatBody(strings.Repeat("a ", 600), 50000)
	r := x.do(call{key: "sk-m", body: body, headers: host.Headers{{"x-model", "gpt-4o"}}, chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, estimate.Bytes(int64(len(body)))+20000, reservedBy(t, r), "the model's limit is held")
}
