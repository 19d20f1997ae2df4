// Package e2e drives the compiled filter through the local gateway with real
// HTTP clients, the official OpenAI and Anthropic Go SDKs, and real Redis.
package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

// frozenClock is a wall clock the test moves by hand, so budget levels are
// exact (no refill between two requests).
type frozenClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *frozenClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

type gwOpt func(*gateway.Config)

func withClock(c *frozenClock) gwOpt { return func(g *gateway.Config) { g.Now = c.Now } }

func startGateway(t testing.TB, pluginConfig string, opts ...gwOpt) *gateway.Gateway {
	t.Helper()
	profile, perr := host.ProfileFromEnv()
	require.NoError(t, perr)
	cfg := gateway.Config{
		Profile:      profile,
		Module:       wasmbuild.Filter(t),
		PluginConfig: []byte(pluginConfig),
		Listen:       "127.0.0.1:0",
		Admin:        "127.0.0.1:0",
		Workers:      2,
	}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Upstream == "" && cfg.UpstreamHandler == nil {
		cfg.UpstreamHandler = mockllm.New(mockllm.Options{})
	}
	g, err := gateway.New(cfg)
	require.NoError(t, err)
	require.NoError(t, g.Start())
	t.Cleanup(func() { _ = g.Close() })
	return g
}

type resp struct {
	status  int
	header  http.Header
	body    []byte
	details map[string]any
}

func post(t testing.TB, g *gateway.Gateway, path, key, body string, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("content-type", "application/json")
	if key != "" {
		req.Header.Set("authorization", "Bearer "+key)
	}
	for i := 1; i < len(hdr); i += 2 {
		req.Header.Set(hdr[i-1], hdr[i])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	out := resp{status: res.StatusCode, header: res.Header, body: b}
	if res.StatusCode == 429 {
		var m map[string]map[string]any
		require.NoError(t, json.Unmarshal(b, &m), string(b))
		out.details, _ = m["error"]["details"].(map[string]any)
	}
	return out
}

func chat(maxTokens int) string {
	return `{"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}],"max_tokens":` + strconv.Itoa(maxTokens) + `}`
}

func TestE2EAdmittedUntilTheKeyBudgetIsSpentThenRetryAfterAdmitsAgain(t *testing.T) {
	g := startGateway(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":6000}},"budget_division":{"replicas":1}}}`)
	admitted := 0
	var refused resp
	for i := 0; i < 20; i++ {
		r := post(t, g, "/v1/chat/completions", "sk-e2e", chat(1000), "x-mock-output-tokens", "1000")
		if r.status == 429 {
			refused = r
			break
		}
		require.Equal(t, 200, r.status, string(r.body))
		require.Equal(t, "6000", r.header.Get("x-ratelimit-tokens-limit"))
		require.NotEmpty(t, r.header.Get("x-ratelimit-tokens-remaining"))
		require.NotEmpty(t, r.header.Get("x-ratelimit-tokens-reset"))
		admitted++
	}
	require.Equal(t, 429, refused.status, "the budget must run out")
	require.GreaterOrEqual(t, admitted, 5)
	require.LessOrEqual(t, admitted, 6)
	require.Equal(t, "token_budget", refused.details["limit_type"])
	require.Equal(t, "api_key", refused.details["token_dimension"])
	require.Equal(t, "minute", refused.details["token_budget"])
	ra, err := strconv.Atoi(refused.header.Get("retry-after"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, ra, 1)
	require.LessOrEqual(t, ra, 11, "a shortfall of at most one request at 100 tokens/s")
	time.Sleep(time.Duration(ra) * time.Second)
	r := post(t, g, "/v1/chat/completions", "sk-e2e", chat(1000), "x-mock-output-tokens", "1")
	require.Equal(t, 200, r.status, "honouring Retry-After gets the next request admitted: %s", r.body)
}

func TestE2EMetricsReachThePrometheusEndpointWithLabels(t *testing.T) {
	g := startGateway(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100}},"budget_division":{"replicas":1}}}`)
	require.Equal(t, 429, post(t, g, "/v1/chat/completions", "sk-m", chat(1000)).status)
	g.Host().Tick() // the filter hands its counters to the proxy on its tick
	res, err := http.Get("http://" + g.AdminAddr() + "/stats/prometheus")
	require.NoError(t, err)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	text := string(b)
	require.Contains(t, text, `rate_limit_exceeded_total{limit_type="token_budget"} 1`)
	require.Contains(t, text, `rate_limit_token_budget_period_refusals_total{dimension="api_key",budget="minute"} 1`)
}
