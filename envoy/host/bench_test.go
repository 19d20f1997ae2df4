package host

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkNewHostCold measures New with 2 workers when the module must be compiled (an empty
// on-disk cache per iteration).
func BenchmarkNewHostCold(b *testing.B) {
	mod := guestModule(b, "big")
	b.ReportMetric(float64(len(mod))/1e6, "MB")
	for i := 0; i < b.N; i++ {
		h, err := New(context.Background(), Options{Module: mod, AllowStdioInit: true, CacheDir: b.TempDir()})
		require.NoError(b, err)
		require.NoError(b, h.Close(context.Background()))
	}
}

// BenchmarkNewHostCached measures New with 2 workers once the compiled code is in the shared
// in-memory cache (canary + 2 worker instances + _initialize + configure).
func BenchmarkNewHostCached(b *testing.B) {
	mod := guestModule(b, "big")
	h, err := New(context.Background(), Options{Module: mod, AllowStdioInit: true})
	require.NoError(b, err)
	require.NoError(b, h.Close(context.Background()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := New(context.Background(), Options{Module: mod, AllowStdioInit: true})
		require.NoError(b, err)
		require.NoError(b, h.Close(context.Background()))
	}
}

// BenchmarkStream runs a whole stream through the test guest: 8 guest callbacks per op
// (context create, request headers/body, response headers/body, log, done, delete), each with
// the guest's own proxy_log and header calls.
func BenchmarkStream(b *testing.B) {
	h, err := New(context.Background(), Options{Module: guestModule(b, "guest"), Workers: 1, MaxLogs: 1})
	require.NoError(b, err)
	defer h.Close(context.Background())
	req := reqHeaders("none")
	resp := Headers{{":status", "200"}}
	body := []byte(`{"model":"gpt-4o"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := h.NewStream(StreamInfo{Worker: 0})
		s.RequestHeaders(req, false)
		s.RequestBody(body, true)
		s.ResponseHeaders(resp, false)
		s.ResponseBody(body, true)
		s.Done()
	}
}

// BenchmarkCallbackOverhead is the host's cost per callback: the big guest exports only
// proxy_on_request_headers (returns at once, no host calls), so each op is one guest callback
// plus the stream bookkeeping.
func BenchmarkCallbackOverhead(b *testing.B) {
	h, err := New(context.Background(), Options{Module: guestModule(b, "big"), AllowStdioInit: true, Workers: 1})
	require.NoError(b, err)
	defer h.Close(context.Background())
	req := reqHeaders("none")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := h.NewStream(StreamInfo{Worker: 0})
		s.RequestHeaders(req, true)
		s.Done()
	}
}
