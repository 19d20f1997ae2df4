package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

const benchBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"how many tokens is this"}]}`
const benchStreamBody = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"how many tokens is this"}]}`

// benchRequests posts body to url b.N times over one keep-alive client, reading every answer.
func benchRequests(b *testing.B, url, body string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}

func benchGateway(b *testing.B) *Gateway {
	g, err := New(Config{Module: wasmbuild.Passthrough(b), PluginConfig: []byte("{}"), Listen: "127.0.0.1:0",
		Admin: "off", UpstreamHandler: mockllm.New(mockllm.Options{}), VMID: "bench", Workers: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = g.Close() })
	return g
}

// BenchmarkMockDirect is the baseline: the mock without the gateway in front.
func BenchmarkMockDirect(b *testing.B) {
	srv := httptest.NewServer(mockllm.New(mockllm.Options{}))
	defer srv.Close()
	b.Run("json", func(b *testing.B) { benchRequests(b, srv.URL+"/v1/chat/completions", benchBody) })
	b.Run("sse", func(b *testing.B) { benchRequests(b, srv.URL+"/v1/chat/completions", benchStreamBody) })
}

// BenchmarkGatewayPassthrough is one request through the gateway running the pass-through module:
// the proxy's own cost plus the ABI round trips, against BenchmarkMockDirect.
func BenchmarkGatewayPassthrough(b *testing.B) {
	g := benchGateway(b)
	b.Run("json", func(b *testing.B) { benchRequests(b, "http://"+g.Addr()+"/v1/chat/completions", benchBody) })
	b.Run("sse", func(b *testing.B) { benchRequests(b, "http://"+g.Addr()+"/v1/chat/completions", benchStreamBody) })
}
