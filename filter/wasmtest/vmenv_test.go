package wasmtest

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// tokenEnvConfig reaches the fleet store with the token of the VM's
// environment variable SHAREDSTORE_TOKEN, and answers 503 when the store
// refuses it (no fallback), so an admitted request proves the token was
// the store's.
const tokenEnvConfig = `{"rate_limiting":{"storage":"redis","limits":{"per_api_key":{"tokens_per_minute":100000}},
  "budget_division":{"replicas":1},
  "redis":{"cluster":"sharedstore","token_env":"SHAREDSTORE_TOKEN","timeout_ms":1000,"fallback_to_memory":false}}}`

func withEnv(env map[string]string) hopt { return func(o *host.Options) { o.Env = env } }

func TestTheSharedstoreTokenIsReadFromTheVMEnvironment(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	srv := httptest.NewServer(server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{}), Token: "from-the-env"}))
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		name   string
		env    map[string]string
		status int
	}{
		{"the store's token", map[string]string{"SHAREDSTORE_TOKEN": "from-the-env", "OTHER": "x"}, 200},
		{"another token", map[string]string{"SHAREDSTORE_TOKEN": "wrong"}, 503},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newHarness(t, tokenEnvConfig, withClusters(map[string]string{"sharedstore": srv.URL}), withEnv(c.env))
			r := x.do(call{key: "sk-env", body: chatBody("hello", 10), chunks: []string{chatResponse(5, 5)}})
			require.Equal(t, c.status, r.status, string(r.body))
		})
	}
}

func TestATokenEnvTheVMDoesNotHaveIsAClearConfigError(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"no environment":    nil,
		"another variable":  {"SHAREDSTORE_TOKENS": "x"},
		"an empty variable": {"SHAREDSTORE_TOKEN": ""},
	} {
		t.Run(name, func(t *testing.T) {
			var logs []string
			_, err := host.New(context.Background(), host.Options{
				Module: wasmbuild.Filter(t), PluginConfig: []byte(tokenEnvConfig), Workers: 1, Profile: envProfile(t),
				Env: env, Log: func(_ host.Level, m string) { logs = append(logs, m) },
			})
			require.Error(t, err, "the canary VM must reject the config")
			all := strings.Join(logs, "\n")
			require.Contains(t, all, "plugin config rejected: error: rate_limiting.redis.token_env: ")
			require.Contains(t, all, "SHAREDSTORE_TOKEN")
		})
	}
}

func TestTheProviderNeverSeesTheGatewayKeyWhenKeyHeadersAreStripped(t *testing.T) {
	const cfg = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":10000}},"budget_division":{"replicas":1}},
	  "identity":{"strip_api_key_headers":true}}`
	x := newHarness(t, cfg)
	for _, path := range []string{"/v1/chat/completions", "/v1/models"} {
		r := x.do(call{path: path, key: "sk-gateway", headers: host.Headers{{"x-api-key", "sk-gateway"}, {"x-trace", "kept"}},
			body: chatBody("hello", 10), chunks: []string{chatResponse(5, 5)}})
		require.Equal(t, 200, r.status, string(r.body))
		for _, h := range r.upstreamHdrs {
			require.NotEqual(t, "authorization", h[0], "%s: the upstream saw %v", path, r.upstreamHdrs)
			require.NotEqual(t, "x-api-key", h[0], "%s: the upstream saw %v", path, r.upstreamHdrs)
		}
		v, _ := r.upstreamHdrs.Get("x-trace")
		require.Equal(t, "kept", v, "only the key headers go")
	}
	// The caller was still metered by its key: the second request sees the
	// first one's spend in its own bucket.
	r := x.do(call{key: "sk-gateway", body: chatBody("hello", 10), chunks: []string{chatResponse(5, 5)}})
	require.Equal(t, "10000", r.header("x-ratelimit-tokens-limit"))
	require.Less(t, atoi(t, r.header("x-ratelimit-tokens-remaining")), int64(10000-10))

	plain := newHarness(t, keyBudgetConfig)
	r = plain.do(call{key: "sk-gateway", body: chatBody("hello", 10), chunks: []string{chatResponse(5, 5)}})
	v, _ := r.upstreamHdrs.Get("authorization")
	require.Equal(t, "Bearer sk-gateway", v, "without the setting the key goes upstream, as before")
}
