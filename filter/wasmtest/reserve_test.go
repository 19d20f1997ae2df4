package wasmtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// reserveConfig is spendConfig with the default rule: each request holds
// its maximum cost at admission. chatBody("hello", 600) may cost 600
// output tokens at $10 per million and its input estimate at $2.50: just
// over $0.006, so one fits in sk-a's $0.01 a day and two do not.
var reserveConfig = strings.Replace(spendConfig, `"reserve": false, `, "", 1)

// admitOpen sends a request on worker w and leaves it in flight: admitted
// and forwarded, its answer not yet come.
func (x *harness) admitOpen(w int, key, body string) *host.Stream {
	x.t.Helper()
	s := x.h.NewStream(host.StreamInfo{Worker: w, SourceAddress: "10.1.2.3:40000"})
	hs := host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"}, {":scheme", "http"},
		{"content-type", "application/json"}, {"authorization", "Bearer " + key}}
	res := s.RequestHeaders(hs, false)
	require.NotEqual(x.t, host.LocalReply, res.Action)
	res = s.RequestBody([]byte(body), true)
	require.NotEqual(x.t, host.LocalReply, res.Action, "admitted")
	return s
}

// answer plays the upstream's answer on an open stream and ends it.
func answer(s *host.Stream, status int, body string) {
	s.ResponseHeaders(host.Headers{{":status", strconv.Itoa(status)}, {"content-type", "application/json"}}, false)
	s.ResponseBody([]byte(body), true)
	s.Done()
}

// A request in flight holds its maximum cost: a parallel one, on another
// worker, that does not fit what is left is refused with the spend 429,
// and once the first settles at its (small) priced usage the next fits.
func TestAnInFlightRequestHoldsItsMaximumCostSoAParallelOneThatDoesNotFitIsRefused(t *testing.T) {
	x := spendHarness(t, reserveConfig)
	first := x.admitOpen(0, "sk-a", chatBody("hello", 600))

	r := x.doOn(1, call{key: "sk-a", body: chatBody("hello", 600), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 429, r.status, "$0.006 held leaves under $0.004: a second maximum of $0.006 does not fit")
	require.Contains(t, string(r.body), "API Key daily spend limit exceeded.")

	answer(first, 200, chatResponse(10, 10))
	r = x.doOn(1, call{key: "sk-a", body: chatBody("hello", 600), chunks: []string{chatResponse(10, 10)}})
	require.Equal(t, 200, r.status, "settled at $0.000125: the reservation is gone")
}

// A request that fails upstream gives its reservation back whole: the
// next one is held in its place, and only that one counts against a third.
func TestAFailedRequestGivesItsSpendReservationBack(t *testing.T) {
	x := spendHarness(t, reserveConfig)
	failed := x.admitOpen(0, "sk-a", chatBody("hello", 600))
	answer(failed, 500, `{"error":{"message":"boom"}}`)
	second := x.admitOpen(1, "sk-a", chatBody("hello", 600))
	r := x.doOn(0, call{key: "sk-a", body: chatBody("hello", 600), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 429, r.status, "the second request's hold stands; the failed one's is gone")
	answer(second, 500, `{"error":{"message":"boom"}}`)
	r = x.doOn(0, call{key: "sk-a", body: chatBody("hello", 600), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 200, r.status, "both failed: nothing is held")
}

// A request whose maximum cost is more than the whole limit is refused at
// once: it could not be served within it.
func TestARequestWhoseMaximumCostExceedsTheLimitIsRefused(t *testing.T) {
	x := spendHarness(t, reserveConfig)
	r := x.priced("sk-a", 1, 1)
	require.Equal(t, 200, r.status)
	big := x.do(call{key: "sk-a", body: chatBody("hello", 2000), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 429, big.status, "2000 output tokens may cost $0.02, over the $0.01 limit")
	x2 := spendHarness(t, spendConfig)
	require.Equal(t, 200, x2.do(call{key: "sk-a", body: chatBody("hello", 2000), chunks: []string{chatResponse(1, 1)}}).status,
		"spend_limits.reserve false keeps the check-only rule: spent $0 < $0.01 admits")
}

// A cut stream's reservation becomes what it delivered (on_cut_stream
// charge_seen), as its token hold does: what it held beyond that is free
// for the next request, which then holds its own maximum in turn.
func TestACutStreamSettlesItsSpendReservationToWhatItDelivered(t *testing.T) {
	x := spendHarness(t, reserveConfig)
	r := x.do(call{key: "sk-a", body: streamBody(600, false), contentType: "text/event-stream",
		chunks: []string{openAIChunk("Once") + openAIChunk(" upon")}, cut: true})
	require.Equal(t, 200, r.status)
	open := x.admitOpen(0, "sk-a", chatBody("hello", 600))
	r = x.doOn(1, call{key: "sk-a", body: chatBody("hello", 600), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, 429, r.status, "the cut stream holds nothing more; the open request holds $0.006")
	answer(open, 200, chatResponse(5, 5))
}
