package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// A body the filter buffers past the gateway's buffer limit is refused, as Envoy refuses it;
// the answer says what the limit is and which flag raises it, in the JSON an SDK shows.
func TestARequestLargerThanTheBufferIsAJSON413NamingTheLimitAndTheFlag(t *testing.T) {
	g := startGateway(t, func(c *Config) {
		c.Module = wasmbuild.Filter(t)
		c.PluginConfig = []byte(`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000000}}},"token_budget":{"max_body_bytes":65536}}`)
		c.BufferLimit = 4096
	})
	body := `{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", 8000) + `"}]}`
	res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", body,
		map[string]string{"content-type": "application/json"})
	raw := readAll(t, res)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, raw)
	require.Equal(t, "application/json", res.Header.Get("content-type"))
	require.Equal(t, "false", res.Header.Get("x-should-retry"), "a body does not shrink by waiting")
	var e struct {
		Error struct {
			Type, Code, Message string
			Details             map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &e), raw)
	require.Equal(t, "invalid_request_error", e.Error.Type)
	require.Equal(t, "request_too_large", e.Error.Code)
	require.Contains(t, e.Error.Message, "4096 bytes")
	require.Contains(t, e.Error.Message, "--max-request-bytes")
	require.Contains(t, e.Error.Message, "token_budget.max_body_bytes")
	require.Equal(t, float64(4096), e.Error.Details["max_request_bytes"])

	// Within the buffer the same request goes through.
	small := `{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"` + strings.Repeat("a", 2000) + `"}]}`
	res = do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", small,
		map[string]string{"content-type": "application/json"})
	require.Equal(t, http.StatusOK, res.StatusCode, readAll(t, res))
}

func TestTheGatewayHandsTheFilterOnlyTheVMEnvironmentItIsGiven(t *testing.T) {
	const cfg = `{"rate_limiting":{"storage":"redis","limits":{"global":{"tokens_per_minute":1000}},` +
		`"redis":{"cluster":"sharedstore","token_env":"TB_SHAREDSTORE_TOKEN"}}}`
	t.Setenv("TB_SHAREDSTORE_TOKEN", "in-the-process-only")
	var logs bytes.Buffer
	base := Config{Module: wasmbuild.Filter(t), PluginConfig: []byte(cfg), Listen: "127.0.0.1:0", Admin: "off",
		Clusters: map[string]string{"sharedstore": "http://127.0.0.1:1"}, UpstreamHandler: http.NotFoundHandler(),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	_, err := New(base)
	require.Error(t, err)
	require.Contains(t, logs.String(), "the VM has no environment variable TB_SHAREDSTORE_TOKEN",
		"the gateway's own environment does not reach the VM")

	base.VMEnv = map[string]string{"TB_SHAREDSTORE_TOKEN": "t0ken"}
	g, err := New(base)
	require.NoError(t, err)
	require.NoError(t, g.Close())
}
