package gateway

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

// h2cClient speaks HTTP/2 over cleartext with prior knowledge only, as
// `curl --http2-prior-knowledge` does: no HTTP/1.1 upgrade, no fallback.
func h2cClient(t *testing.T) *http.Client {
	t.Helper()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func TestTheProxyListenerAcceptsHTTP2WithPriorKnowledgeAsEnvoyDoes(t *testing.T) {
	g := startGateway(t, func(c *Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{}) })
	c := h2cClient(t)
	for _, stream := range []bool{false, true} {
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],"max_tokens":50}`
		if stream {
			body = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hello"}],"max_tokens":50}`
		}
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("authorization", "Bearer sk-x")
		req.Header.Set("x-mock-output-tokens", "4")
		res, err := c.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(res.Body)
		require.NoError(t, res.Body.Close())
		require.NoError(t, err)
		require.Equal(t, 2, res.ProtoMajor, "HTTP/2 end to end, not a downgrade")
		require.Equal(t, http.StatusOK, res.StatusCode, string(b))
		require.Equal(t, "cfg-1", res.Header.Get("x-gw-config"), "the filter ran on the request")
		if stream {
			require.Contains(t, string(b), "data: [DONE]")
		} else {
			require.Contains(t, string(b), `"completion_tokens":4`)
		}
	}
	// HTTP/1.1 on the same listener still works.
	res, err := http.Post("http://"+g.Addr()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())
	require.Equal(t, 1, res.ProtoMajor)
	require.Equal(t, http.StatusOK, res.StatusCode)
}
