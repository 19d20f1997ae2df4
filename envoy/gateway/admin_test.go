package gateway

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

func TestReadyAnswersLive(t *testing.T) {
	g := startGateway(t, nil)
	res := do(t, context.Background(), http.MethodGet, "http://"+g.AdminAddr()+"/ready", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "LIVE\n", readAll(t, res))
}

func TestPrometheusLiftsLabelsOutOfMetricNames(t *testing.T) {
	g := startGateway(t, nil)
	for i := 0; i < 2; i++ {
		res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", `{}`, nil)
		readAll(t, res)
	}
	res := do(t, context.Background(), http.MethodGet, "http://"+g.AdminAddr()+"/stats/prometheus", "", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.True(t, strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4"))
	text := readAll(t, res)
	require.Contains(t, text, "# TYPE rate_limit_exceeded_total counter\n")
	require.Contains(t, text, "rate_limit_exceeded_total{limit_type=\"token_budget\"} 2\n")
	require.Contains(t, text, "# TYPE gw_streams_completed_total counter\n")
	require.NotContains(t, text, "wasmcustom")
}

func TestReloadAppliesTheFileAndKeepsTheOldConfigOnRejection(t *testing.T) {
	path := writeFile(t, "plugin.json", "cfg-1")
	g := startGateway(t, func(c *Config) { c.ConfigPath = path; c.PluginConfig = nil })
	configSeen := func() string {
		res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", `{}`, nil)
		readAll(t, res)
		return res.Header.Get("x-gw-config")
	}
	reload := func(body string) (int, string) {
		res := do(t, context.Background(), http.MethodPost, "http://"+g.AdminAddr()+"/reload", body, nil)
		return res.StatusCode, readAll(t, res)
	}
	require.Equal(t, "cfg-1", configSeen())

	require.NoError(t, os.WriteFile(path, []byte("cfg-2"), 0o644))
	code, msg := reload("")
	require.Equal(t, http.StatusOK, code, msg)
	require.Equal(t, "cfg-2", configSeen())

	require.NoError(t, os.WriteFile(path, []byte("please reject me"), 0o644))
	code, msg = reload("")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, msg, "reload rejected")
	require.Equal(t, "cfg-2", configSeen(), "a rejected config leaves the running one in place")

	code, msg = reload("cfg-posted")
	require.Equal(t, http.StatusOK, code, msg)
	require.Equal(t, "cfg-posted", configSeen())

	res := do(t, context.Background(), http.MethodGet, "http://"+g.AdminAddr()+"/reload", "", nil)
	readAll(t, res)
	require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
}

func TestBadConfigAtStartIsRefusedWithTheReason(t *testing.T) {
	_, err := New(Config{Module: guest(t), PluginConfig: []byte("reject"), UpstreamHandler: mockllm.New(mockllm.Options{}),
		VMID: "gw-" + t.Name()})
	require.Error(t, err)
	require.Contains(t, err.Error(), "load plugin")
}

func TestUpstreamMustBeAURLOrMock(t *testing.T) {
	for _, up := range []string{"", "localhost:8000", "ftp://x"} {
		_, err := New(Config{Module: guest(t), PluginConfig: []byte("c"), Upstream: up, VMID: "gw-" + t.Name()})
		require.Error(t, err, up)
	}
}
