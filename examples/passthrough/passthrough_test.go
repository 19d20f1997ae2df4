package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

func newHost(tb testing.TB, workers int) *host.Host {
	tb.Helper()
	h, err := host.New(context.Background(), host.Options{
		Module: wasmbuild.Passthrough(tb), PluginConfig: []byte(`{"ignored":true}`),
		VMID: "passthrough-" + tb.Name(), RootID: "passthrough", Workers: workers,
		Profile: host.ProfileLegacy,
	})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = h.Close(context.Background()) })
	return h
}

func request(i int) host.Headers {
	return host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
		{":scheme", "http"}, {"x-request-id", strconv.Itoa(i)}}
}

// The baseline must be invisible: every direction continues unchanged, on
// every worker, on Envoy's legacy profile, with no log line, trap or
// poll_oneoff call.
func TestPassthroughForwardsEveryStreamUntouched(t *testing.T) {
	h := newHost(t, 2)
	for i := 0; i < 50; i++ {
		s := h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.0.0.1:5555"})
		r := s.RequestHeaders(request(i), false)
		require.Equal(t, host.Continue, r.Action)
		require.Equal(t, request(i), r.Headers)
		r = s.RequestBody([]byte(`{"model":"gpt-4o"}`), true)
		require.Equal(t, host.Continue, r.Action)
		require.Equal(t, `{"model":"gpt-4o"}`, string(r.Body))
		r = s.ResponseHeaders(host.Headers{{":status", "200"}}, false)
		require.Equal(t, host.Continue, r.Action)
		r = s.ResponseBody([]byte(`{"usage":{}}`), true)
		require.Equal(t, host.Continue, r.Action)
		require.Equal(t, `{"usage":{}}`, string(r.Body))
		s.Done()
	}
	require.Empty(t, h.Traps())
	require.Empty(t, h.Logs())
	require.Zero(t, h.PollOneoffCalls())
}

// BenchmarkPassthroughStream is the per-stream cost of the ABI round trips
// alone, the denominator of the filter's overhead ratio.
func BenchmarkPassthroughStream(b *testing.B) {
	h := newHost(b, 1)
	req := request(0)
	resp := host.Headers{{":status", "200"}}
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		s := h.NewStream(host.StreamInfo{Worker: 0})
		s.RequestHeaders(req, false)
		s.RequestBody(body, true)
		s.ResponseHeaders(resp, false)
		s.ResponseBody(body, true)
		s.Done()
	}
}
