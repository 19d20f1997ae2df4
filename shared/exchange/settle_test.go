package exchange

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/sse"
)

const (
	chunkHi    = `data: {"choices":[{"index":0,"delta":{"content":"Hello"}}]}` + "\n\n"
	chunkUsage = `data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4}}` + "\n\n"
	chunkDone  = "data: [DONE]\n\n"
)

// admittedRig is a request of hiBody (hold 108: input 8, ceiling 100)
// admitted on the whole plan.
func admittedRig(t *testing.T, cfg, body string) *rig {
	r := newRig(t, cfg)
	r.send(chat(body))
	r.admitAll(false)
	r.drain()
	return r
}

// How a hold ends at the response's end: on the usage the backend
// reported, however large the answer and however it is split; released
// when the answer costs nothing or is whole JSON that reports no usage;
// charged its hold plus an estimate of its bytes when the usage cannot be
// read, never the hold alone.
func TestAHoldEndsOnWhatTheAnswerReported(t *testing.T) {
	streamBody := `{"model":"m","stream":true,"max_tokens":100,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	est, err := estimate.Parse([]byte(streamBody), 0)
	require.NoError(t, err)
	// What the filter counts without the backend's usage: the input
	// estimate plus the deltas it saw.
	seen := "settle " + strconv.FormatInt(est.Input+estimate.Text([]byte("Hello")), 10)
	for _, c := range []struct {
		name    string
		body    string
		headers [][2]string
		chunks  []string
		want    []string
	}{
		{"a JSON answer settles on its usage", hiBody, jsonOK(),
			[]string{`{"usage":{"prompt_tokens":10,`, `"completion_tokens":5}}`}, []string{"settle 15"}},
		{"a JSON answer without usage is released", hiBody, jsonOK(), []string{`{"choices":[]}`}, []string{"release"}},
		{"a JSON answer in chunks without usage is released", hiBody, jsonOK(), []string{`{"choices"`, `:[]}`}, []string{"release"}},
		{"an empty answer is released", hiBody, jsonOK(), nil, []string{"release"}},
		{"an answer that is not JSON pays its hold and its bytes", hiBody, jsonOK(), []string{"not json at all!"}, []string{"settle " + held(16)}},
		{"an answer in chunks that is not JSON pays its hold and its bytes", hiBody, jsonOK(), []string{`{"usage":{"prompt_tokens":10,`, `"completion_tokens":5}`}, []string{"settle " + held(52)}},
		{"an answer larger than any buffer settles on its usage", hiBody, jsonOK(), hugeAnswer(2_300_000), []string{"settle 2300005"}},
		{"an answer whose usage object is too large to keep pays its hold and its bytes", hiBody, jsonOK(),
			[]string{`{"usage":{"junk":"` + strings.Repeat("x", 70000), `","prompt_tokens":10,"completion_tokens":5}}`}, []string{"settle " + held(70063)}},
		{"an error status costs nothing", hiBody, [][2]string{{":status", "500"}}, []string{`{"usage":{"prompt_tokens":10,"completion_tokens":5}}`}, []string{"release"}},
		{"a cache hit costs nothing", hiBody, append(jsonOK(), [2]string{"x-cache", "hit"}), []string{`{}`}, []string{"release"}},
		{"a compressed answer pays its hold and its bytes", hiBody, append(jsonOK(), [2]string{"content-encoding", "gzip"}), []string{"\x1f\x8b"}, []string{"settle " + held(2)}},
		{"identity encoding is no compression", hiBody, append(jsonOK(), [2]string{"content-encoding", "identity"}),
			[]string{`{"usage":{"prompt_tokens":1,"completion_tokens":1}}`}, []string{"settle 2"}},
		{"a stream settles on its usage event", streamBody, sseOK(), []string{chunkHi, chunkUsage[:20], chunkUsage[20:] + chunkDone}, []string{"settle 14"}},
		{"a stream without usage pays input plus deltas", streamBody, sseOK(), []string{chunkHi + chunkDone}, []string{seen}},
		{"a stream that lost an event pays its hold and its bytes", streamBody, sseOK(),
			[]string{`data: {"x":"` + strings.Repeat("a", sse.MaxEvent) + `"}` + "\n\n" + chunkDone}, []string{"settle " + held(int64(len(`data: {"x":"`+strings.Repeat("a", sse.MaxEvent)+`"}`+"\n\n"+chunkDone)))}},
		{"a stream cut before its end pays what it delivered", streamBody, sseOK(), []string{chunkHi}, []string{seen}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := admittedRig(t, keyBudget, c.body)
			r.respond(c.headers, c.chunks...)
			r.x.Log()
			r.x.Done()
			require.Equal(t, c.want, r.drain(Settle, Release))
		})
	}
}

// held is what an answer of n bytes whose usage cannot be read pays on
// hiBody's hold of 108: the hold and the bytes' estimate.
func held(n int64) string { return strconv.FormatInt(108+estimate.Bytes(n), 10) }

// hugeAnswer is a chat completion of output tokens ("tok " each, so more
// than 8 MiB from two million on) in 64 KiB chunks, reporting 5 input.
func hugeAnswer(output int) []string {
	body := `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("tok ", output) +
		`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":` + strconv.Itoa(output) + `}}`
	var chunks []string
	for len(body) > 0 {
		n := min(len(body), 64<<10)
		chunks, body = append(chunks, body[:n]), body[n:]
	}
	return chunks
}

// A hold still open when the host ends the stream is cut: charged what the
// answer delivered (the input estimate when nothing came back), or
// released under on_cut_stream "release"; an error answer costs nothing.
func TestACutAnswerIsChargedWhatItDelivered(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		respond   func(r *rig)
		want      []string
		end       string
	}{
		{"no answer yet: the input", keyBudget, func(*rig) {}, []string{"settle 8"}, `"end":"cut","usage":8`},
		{"a body begun and whole: its usage", keyBudget, func(r *rig) {
			r.x.ResponseHeaders(&response{headers: jsonOK()}, false, nil)
			r.x.ResponseBody(&response{chunk: []byte(`{"usage":{"prompt_tokens":3,"completion_tokens":3}}`)}, 52, false)
		}, []string{"settle 6"}, `"end":"cut","usage":6`},
		{"a body begun, unreadable: its hold and its bytes", keyBudget, func(r *rig) {
			r.x.ResponseHeaders(&response{headers: jsonOK()}, false, nil)
			r.x.ResponseBody(&response{chunk: []byte(`{"usage":`)}, 9, false)
		}, []string{"settle 111"}, `"end":"cut","usage":111`},
		{"an error answer: nothing", keyBudget, func(r *rig) {
			r.x.ResponseHeaders(&response{headers: [][2]string{{":status", "429"}}}, false, nil)
		}, []string{"release"}, `"end":"cut","usage":0`},
		{"release configured: nothing", withConfig(`"token_budget":{"on_cut_stream":"release"}`), func(*rig) {}, []string{"release"}, `"end":"cut","usage":0`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := admittedRig(t, c.cfg, hiBody)
			c.respond(r)
			r.x.Log()
			r.x.Done()
			fx := r.drain(Settle, Release, RecordDecision)
			require.Equal(t, c.want, fx[:len(fx)-1])
			require.Contains(t, fx[len(fx)-1], c.end)
		})
	}
}

// The stream a client asked without usage gets the usage chunk only
// because the filter asked: it is read for settlement and taken out of
// what the client receives, however the bytes are split.
func TestTheInjectedUsageChunkIsReadThenTakenOut(t *testing.T) {
	body := `{"model":"m","stream":true,"max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
	stream := chunkHi + chunkUsage + chunkDone
	for split := 0; split <= len(stream); split++ {
		r := admittedRig(t, keyBudget, body)
		resp := &response{headers: sseOK()}
		r.x.ResponseHeaders(resp, false, nil)
		var client strings.Builder
		for i, part := range []string{stream[:split], stream[split:]} {
			resp.chunk = []byte(part)
			r.x.ResponseBody(resp, len(part), i == 1)
			forwarded := part
			for _, e := range r.x.Drain() {
				switch e.Kind {
				case SetResponseBody:
					forwarded = string(e.Body)
				case Settle:
					require.Equal(t, int64(14), e.Tokens, "split %d: settled on the usage it read", split)
				}
			}
			client.WriteString(forwarded)
		}
		require.Equal(t, chunkHi+chunkDone, client.String(), "split %d", split)
	}
}

// Spend limits: an unpriced model cannot be limited and is refused; a
// spend refusal names its limit; an admitted request is priced at
// settlement on the same usage the tokens settle on.
func TestSpendLimitsPriceAndRefuseRequests(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000000}}},` +
		`"pricing":{"m":{"input":"2.00","output":"10.00"}},` +
		`"api_keys":[{"key":"sk-a","id":"a","team":"t","spend_limit_day_usd":5}]}`
	t.Run("an unpriced model", func(t *testing.T) {
		r := newRig(t, cfg)
		require.Equal(t, AfterAdmission, r.send(chat(`{"model":"other","messages":[]}`)))
		require.Equal(t, Pause, r.x.Admission())
		require.Equal(t, []string{"count_request invalid", "local_reply 400 model_not_priced"}, r.drain(CountRequest, LocalReply, Admit))
	})
	t.Run("a spend refusal names its limit and takes nothing", func(t *testing.T) {
		r := newRig(t, cfg)
		r.send(chat(hiBody))
		r.drain()
		r.answer(limit.Outcome{Result: limit.ResultSpendRefused,
			SpendRefusal: &spend.Exceeded{Slot: spend.KeyDay, Limit: 5 * money.OneUSD, Used: 5 * money.OneUSD}}, false)
		require.Equal(t, []string{"count_request refused", "count_spend_refusal api_key day", "local_reply 429 spend_limit_exceeded"},
			r.drain(CountRequest, CountSpendRefusal, LocalReply, Settle, Release))
	})
	t.Run("an exhausted team balance is counted as the team's balance", func(t *testing.T) {
		r := newRig(t, cfg)
		r.send(chat(hiBody))
		r.drain()
		r.answer(limit.Outcome{Result: limit.ResultSpendRefused, SpendRefusal: &spend.Exceeded{Balance: true}}, false)
		require.Equal(t, []string{"count_request refused", "count_spend_refusal balance", "local_reply 429 balance_exhausted"},
			r.drain(CountRequest, CountSpendRefusal, LocalReply, Settle, Release))
	})
	t.Run("priced at settlement", func(t *testing.T) {
		r := admittedRig(t, cfg, hiBody)
		require.True(t, r.admitted.Spend.Any(), "the plan carries the key's spend limit")
		r.respond(jsonOK(), `{"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
		// 1000 × $2/M + 100 × $10/M = $0.003 = 3,000,000 nano-USD.
		require.Equal(t, []string{"count_spend_usd 3000000", "settle 1100"}, r.drain(CountSpendUSD, Settle))
		r.x.Log()
		require.Contains(t, r.drain(RecordDecision)[0], `"spend_nano_usd":3000000,"spend_usd":"0.003"`)
	})
}

// With rate_limiting.redis.fleet_spend the fleet store keeps limits the
// config does not name (set through its admin API), so every request
// carries its spend part, priced, even for a key with no limit here;
// without it a key with no limit carries none.
func TestFleetSpendSendsEveryRequestsSpendToTheStore(t *testing.T) {
	cfg := func(fleet bool) string {
		return `{"rate_limiting":{"storage":"redis","redis":{"cluster":"sharedstore","fleet_spend":` + strconv.FormatBool(fleet) + `},` +
			`"limits":{"per_api_key":{"tokens_per_minute":1000000}}},` +
			`"pricing":{"m":{"input":"2.00","output":"10.00"}},"api_keys":[{"key":"sk-a","id":"a","team":"t"}]}`
	}
	r := admittedRig(t, cfg(true), hiBody)
	sp := r.admitted.Spend
	require.True(t, sp.Fleet, "the store is told to apply its own limits")
	require.Equal(t, "m", sp.Model)
	require.NotZero(t, sp.Day)
	require.False(t, sp.Policy.Any(), "the config sets no limit of its own")

	r = admittedRig(t, cfg(false), hiBody)
	require.Equal(t, limit.Spend{}, r.admitted.Spend, "no limit anywhere: no spend part")

	r = newRig(t, cfg(true))
	require.Equal(t, AfterAdmission, r.send(chat(`{"model":"other","messages":[]}`)))
	require.Equal(t, []string{"local_reply 400 model_not_priced"}, r.drain(LocalReply, Admit), "an unpriced model cannot meet the fleet's limits")
}
