package wasmtest

import (
	"encoding/json"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
)

const streamConfig = `{
  "rate_limiting": {
    "limits": { "per_api_key": { "tokens_per_minute": 100000 } },
    "budget_division": { "replicas": 1 }
  },
  "token_budget": { "inject_stream_usage": %INJECT%, "on_cut_stream": "%CUT%" }
}`

// streamCfg is the streaming config; chargeCut selects on_cut_stream
// "charge_seen" (true) or the seed's "release" (false).
func streamCfg(inject, chargeCut bool) string {
	s := strings.Replace(streamConfig, "%INJECT%", strconv.FormatBool(inject), 1)
	policy := "release"
	if chargeCut {
		policy = "charge_seen"
	}
	return strings.Replace(s, "%CUT%", policy, 1)
}

var (
	streamBody       = StreamBody
	openAIChunk      = OpenAIChunk
	openAIUsageChunk = OpenAIUsageChunk
)

const done = Done

// level reads the key's minute level through a probe request of a known
// reservation, settled at zero so it does not move the level itself. It
// ticks first: the probe runs on the next worker round robin, which sees a
// refund settled on the other one once a tick has written it.
func (x *harness) level(t testing.TB, key string, probeReserve int64) int64 {
	t.Helper()
	x.h.Tick()
	r := x.do(call{key: key, body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 200, r.status)
	return atoi(t, r.header("x-ratelimit-tokens-remaining")) + probeReserve
}

func probeReserve(t testing.TB, cfg string) int64 {
	t.Helper()
	x := newHarness(t, cfg)
	return reservedBy(t, x.do(call{key: "sk-probe", body: chatBody("hello", 10), chunks: []string{chatResponse(0, 0)}}))
}

// inputOf is the input estimate the filter makes of body (the same code,
// compiled natively), which is what a cut answer with no output is charged.
func inputOf(t testing.TB, body string) int64 {
	t.Helper()
	req, err := estimate.Parse([]byte(body), config.DefaultOutputTokens)
	require.NoError(t, err)
	return req.Input
}

// splitAt cuts b into two chunks at i (the first may be empty).
func splitAt(b string, i int) []string { return []string{b[:i], b[i:]} }

func TestAStreamSettlesWithItsFinalUsageChunkSplitAtEveryByte(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	sse := openAIChunk("Once") + openAIChunk(" upon") + openAIUsageChunk(40, 2) + done
	for i := 0; i <= len(sse); i++ {
		key := "sk-split-" + strconv.Itoa(i)
		r := x.do(call{key: key, body: streamBody(1000, true), contentType: "text/event-stream", chunks: splitAt(sse, i)})
		require.Equal(t, 200, r.status)
		require.Equal(t, int64(100000-42), x.level(t, key, probe), "split at %d", i)
	}
}

func TestAStreamWithoutUsageSettlesTheEstimatePlusCountedDeltas(t *testing.T) {
	cfg := streamCfg(false, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	body := streamBody(1000, false)
	first := x.do(call{key: "sk-a", body: body, contentType: "text/event-stream",
		chunks: []string{openAIChunk("Once upon a time"), done}})
	input := reservedBy(t, first) - 1000
	got := 100000 - x.level(t, "sk-a", probe)
	require.Greater(t, got, input, "the deltas are charged on top of the input estimate")
	require.Less(t, got, input+20)
}

func TestStreamUsageIsInjectedIntoOpenAIRequestsThatLackIt(t *testing.T) {
	x := newHarness(t, streamCfg(true, false))
	r := x.do(call{key: "sk-a", body: streamBody(1000, false), contentType: "text/event-stream",
		chunks: []string{openAIUsageChunk(1, 1), done}})
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.upstreamBody, &m), string(r.upstreamBody))
	require.Equal(t, true, m["stream_options"].(map[string]any)["include_usage"])
	require.Equal(t, true, m["stream"])
	require.Equal(t, float64(1000), m["max_tokens"])
	_, hasLen := r.upstreamHdrs.Get("content-length")
	require.False(t, hasLen, "a rewritten body must not keep the old length")
	require.Equal(t, done, string(r.body), "the usage chunk the client did not ask for is taken out")
}

func TestAClientThatAskedForUsageKeepsItsUsageChunk(t *testing.T) {
	x := newHarness(t, streamCfg(true, false))
	sse := openAIChunk("Hi") + openAIUsageChunk(3, 1) + done
	for i := 0; i <= len(sse); i += 13 {
		r := x.do(call{key: "sk-a", body: streamBody(1000, true), contentType: "text/event-stream", chunks: splitAt(sse, i)})
		require.Equal(t, sse, string(r.body), "split at %d", i)
	}
}

func TestTheInjectedUsageChunkIsDroppedAtEverySplitAndStillSettles(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	sse := openAIChunk("Once") + openAIUsageChunk(40, 2) + done
	for i := 0; i <= len(sse); i++ {
		key := "sk-drop-" + strconv.Itoa(i)
		r := x.do(call{key: key, body: streamBody(1000, false), contentType: "text/event-stream", chunks: splitAt(sse, i)})
		require.Equal(t, openAIChunk("Once")+done, string(r.body), "split at %d", i)
		require.Equal(t, int64(100000-42), x.level(t, key, probe), "split at %d", i)
	}
}

func TestACutStreamReleasesItsHoldInFull(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	r := x.do(call{key: "sk-a", body: streamBody(5000, true), contentType: "text/event-stream",
		chunks: []string{openAIChunk("Once"), openAIChunk(" upon")}, cut: true})
	require.Equal(t, 200, r.status)
	require.Equal(t, int64(100000), x.level(t, "sk-a", probe))
}

func TestChargeSeenChargesACutStreamTheEstimatePlusDeltasSeen(t *testing.T) {
	cfg := streamCfg(true, true)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	r := x.do(call{key: "sk-a", body: streamBody(5000, true), contentType: "text/event-stream",
		chunks: []string{openAIChunk("Once"), openAIChunk(" upon")}, cut: true})
	input := reservedBy(t, r) - 5000
	charged := 100000 - x.level(t, "sk-a", probe)
	require.Greater(t, charged, input)
	require.Less(t, charged, input+10)
}

func TestAFailedOrCachedResponseReleasesItsHold(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	x.do(call{key: "sk-fail", body: chatBody("hi", 3000), status: 500, chunks: []string{`{"error":{}}`}})
	require.Equal(t, int64(100000), x.level(t, "sk-fail", probe))
	x.do(call{key: "sk-cache", body: chatBody("hi", 3000), respHeaders: host.Headers{{"x-cache", "HIT"}},
		chunks: []string{chatResponse(500, 500)}})
	require.Equal(t, int64(100000), x.level(t, "sk-cache", probe), "a cache hit releases its input and output hold")
	x.do(call{key: "sk-nousage", body: chatBody("hi", 3000), chunks: []string{`{"choices":[]}`}})
	require.Equal(t, int64(100000), x.level(t, "sk-nousage", probe))
}

func TestAnthropicStreamSettlesMessageStartPlusMessageDelta(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	sse := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":30,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	body := `{"model":"claude","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for _, i := range []int{0, 17, 100, len(sse) / 2, len(sse) - 3} {
		key := "sk-anth-" + strconv.Itoa(i)
		x.do(call{path: "/v1/messages", key: key, body: body, contentType: "text/event-stream", chunks: splitAt(sse, i)})
		require.Equal(t, int64(100000-47), x.level(t, key, probe), "split at %d", i)
	}
}

func TestResponsesStreamSettlesOnResponseCompleted(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	sse := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"status\":\"in_progress\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r\",\"status\":\"completed\",\"usage\":{\"input_tokens\":20,\"output_tokens\":9,\"total_tokens\":29}}}\n\n"
	body := `{"model":"gpt-4o","input":"hi","stream":true,"max_output_tokens":2000}`
	x.do(call{path: "/v1/responses?x=1", key: "sk-r", body: body, contentType: "text/event-stream", chunks: splitAt(sse, 50)})
	require.Equal(t, int64(100000-29), x.level(t, "sk-r", probe))
}

// After any mix of completed, failed, cut and refused requests, once every
// stream is done each bucket equals its capacity minus exactly what settled.
func TestNoHoldLeaksAndNoneIsCountedTwice(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":60000,"tokens_per_day":900000},
	  "per_api_key":{"tokens_per_minute":30000,"tokens_per_day":500000}},"budget_division":{"replicas":1}},
	  "token_budget":{"inject_stream_usage":true}}`
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	rng := rand.New(rand.NewSource(7))
	settled := map[string]int64{}
	keys := []string{"sk-1", "sk-2", "sk-3"}
	for i := 0; i < 90; i++ {
		key := keys[rng.Intn(len(keys))]
		maxTok := 100 + rng.Intn(1000)
		// Usage within the reservation, so every settlement is exact (an
		// uncoverable overage is pinned by the store's own tests).
		p, c := rng.Intn(3), rng.Intn(maxTok)
		var r reply
		switch rng.Intn(5) {
		case 0: // completed, not streamed
			r = x.do(call{key: key, body: chatBody("hello world", maxTok), chunks: []string{chatResponse(p, c)}})
			if r.status == 200 {
				settled[key] += int64(p + c)
			}
		case 1: // completed stream
			r = x.do(call{key: key, body: streamBody(maxTok, true), contentType: "text/event-stream",
				chunks: []string{openAIChunk("a"), openAIUsageChunk(p, c), done}})
			if r.status == 200 {
				settled[key] += int64(p + c)
			}
		case 2: // failed upstream
			x.do(call{key: key, body: chatBody("hello", maxTok), status: 503, chunks: []string{"{}"}})
		case 3: // cut stream: charged what it delivered
			body := streamBody(maxTok, true)
			r = x.do(call{key: key, body: body, contentType: "text/event-stream",
				chunks: []string{openAIChunk("a")}, cut: true})
			if r.status == 200 {
				settled[key] += inputOf(t, body) + estimate.Text([]byte("a"))
			}
		case 4: // a request too large for any budget: refused
			r = x.do(call{key: key, body: chatBody("hello", 40000)})
			require.Equal(t, 429, r.status)
		}
	}
	for _, k := range keys {
		require.Equal(t, 30000-settled[k], x.level(t, k, probe), k)
	}
}

func TestTheBackendIsAskedForAnUncompressedAnswerAndACompressedOneIsChargedItsHold(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	r := x.do(call{key: "sk-gz", body: chatBody("hello", 3000), headers: host.Headers{{"accept-encoding", "gzip, br"}},
		respHeaders: host.Headers{{"content-encoding", "gzip"}}, chunks: []string{"\x1f\x8b\x08\x00binary"}})
	require.Equal(t, 200, r.status)
	_, asked := r.upstreamHdrs.Get("accept-encoding")
	require.False(t, asked, "the filter must be able to read the usage block")
	held := reservedBy(t, r)
	require.Equal(t, 100000-held-estimate.Bytes(int64(len("\x1f\x8b\x08\x00binary"))), x.level(t, "sk-gz", probe),
		"an unreadable answer is charged what it held and its bytes, never free")
}

func TestAnNChoicesRequestReservesEveryChoicesCeiling(t *testing.T) {
	x := newHarness(t, streamCfg(true, false))
	one := x.do(call{key: "sk-n1", body: chatBody("hello", 1000), chunks: []string{chatResponse(0, 0)}})
	body := `{"model":"gpt-4o","n":4,"messages":[{"role":"user","content":"hello"}],"max_tokens":1000}`
	four := x.do(call{key: "sk-n4", body: body, chunks: []string{chatResponse(0, 0)}})
	require.InDelta(t, reservedBy(t, one)+3000, reservedBy(t, four), 2)
}
