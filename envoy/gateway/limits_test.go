package gateway

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRequestHeadersBeyondEnvoysSixtyKiBAreAnswered431(t *testing.T) {
	g := startGateway(t, nil)
	tests := []struct {
		name   string
		size   int
		status int
	}{
		{"well under the limit", 50 << 10, http.StatusOK},
		{"just over the limit, below Go's own reader limit", 61 << 10, http.StatusRequestHeaderFieldsTooLarge},
		{"100 KB", 100_000, http.StatusRequestHeaderFieldsTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", `{}`,
				map[string]string{"x-big": strings.Repeat("a", tc.size)})
			readAll(t, res)
			require.Equal(t, tc.status, res.StatusCode)
		})
	}
}

// rawRequest opens a connection and sends a request head announcing a body of length bytes.
func rawRequest(t *testing.T, addr string, length int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: "+strconv.Itoa(length)+"\r\n\r\n")
	require.NoError(t, err)
	return c
}

func TestAClientThatStopsSendingItsBodyIsCutByTheStreamIdleTimeout(t *testing.T) {
	g := startGateway(t, func(c *Config) { c.StreamIdleTimeout = 300 * time.Millisecond })
	c := rawRequest(t, g.Addr(), 100)
	_, err := io.WriteString(c, `{"model":`) // then nothing
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	require.Equal(t, http.StatusRequestTimeout, res.StatusCode)
	require.Equal(t, "stream timeout", string(body))
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
	require.Eventually(t, func() bool { return g.Host().OpenStreams() == 0 }, 20*time.Second, 5*time.Millisecond,
		"the filter's stream ends too")
}

func TestASlowClientThatKeepsSendingIsNotCutByTheStreamIdleTimeout(t *testing.T) {
	g := startGateway(t, func(c *Config) { c.StreamIdleTimeout = 300 * time.Millisecond })
	body := `{"model":"gpt-4o","messages":[]}`
	c := rawRequest(t, g.Addr(), len(body))
	// The whole body takes about three timeouts to arrive, but no gap reaches one.
	for i := 0; i < len(body); i += 4 {
		_, err := io.WriteString(c, body[i:min(i+4, len(body))])
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	_, _ = io.ReadAll(res.Body)
	require.Equal(t, http.StatusOK, res.StatusCode)
}

func TestAnUpstreamThatGoesQuietIsCutByTheStreamIdleTimeout(t *testing.T) {
	g := startGateway(t, func(c *Config) { c.StreamIdleTimeout = 300 * time.Millisecond })
	// The mock waits 30 s between streamed events: after the first, nothing moves.
	res := do(t, context.Background(), http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions",
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":5}`,
		map[string]string{"x-mock-chunk-delay-ms": "30000"})
	start := time.Now()
	_, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Error(t, err, "a stream cut after its headers is reset, not ended cleanly")
	require.Less(t, time.Since(start), 10*time.Second)
}
