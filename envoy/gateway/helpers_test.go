package gateway

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

// guest is the gateway tests' own module (testdata/gwguest); see its doc comment.
func guest(tb testing.TB) []byte {
	tb.Helper()
	return wasmbuild.Build(tb, "./envoy/gateway/testdata/gwguest")
}

// startGateway runs a gateway on loopback ports with the test guest; mutate adjusts the config.
func startGateway(t *testing.T, mutate func(*Config)) *Gateway {
	t.Helper()
	profile, err := host.ProfileFromEnv()
	require.NoError(t, err)
	cfg := Config{
		Profile:      profile,
		Module:       guest(t),
		PluginConfig: []byte("cfg-1"),
		Listen:       "127.0.0.1:0",
		Admin:        "127.0.0.1:0",
		VMID:         "gw-" + t.Name(),
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	if cfg.Upstream == "" && cfg.UpstreamHandler == nil {
		cfg.UpstreamHandler = mockllm.New(mockllm.Options{})
	}
	g, err := New(cfg)
	require.NoError(t, err)
	require.NoError(t, g.Start())
	t.Cleanup(func() { require.NoError(t, g.Close()) })
	return g
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func do(t *testing.T, ctx context.Context, method, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	var rb io.Reader
	if body != "" {
		rb = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rb)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return res
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// waitServed waits until the mock recorded n requests: it records after writing its answer, so
// a client can hold the answer before the record exists.
func waitServed(t *testing.T, tally *mockllm.Tally, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, tally.WaitCount(ctx, n))
}

// metric reads one of the guest's counters from the host, after a tick has
// handed it the increments the guest sums between ticks.
func metric(g *Gateway, name string) int64 {
	g.Host().Tick()
	v, _ := g.Host().Metric(name)
	return v
}
