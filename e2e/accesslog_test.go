package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/shared/identity"
)

// lockedBuffer is an access-log sink the test reads while the gateway writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func TestE2EEveryRequestWritesOneAccessLogLineWithTheFiltersDecision(t *testing.T) {
	sink := &lockedBuffer{}
	g := startGateway(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":6000}},"budget_division":{"replicas":1}},
	  "api_keys":[{"key":"sk-logged","id":"acme-prod"}]}`, func(c *gateway.Config) { c.AccessLog = sink })

	require.Equal(t, 200, post(t, g, "/v1/chat/completions", "sk-logged", chat(1000), "x-mock-output-tokens", "40").status)
	require.Equal(t, 429, post(t, g, "/v1/chat/completions", "sk-logged", chat(9000)).status)
	res, br := openStream(t, g, "sk-anon", chatReq("go on", 1000, true), "x-mock-output-tokens", "500", "x-mock-chunk-delay-ms", "5")
	_, _ = br.ReadString('\n')
	_ = res.Body.Close() // cut by the client

	var lines []map[string]any
	require.True(t, waitFor(10*time.Second, func() bool { lines = sink.lines(t); return len(lines) == 3 }), "one line per request")
	admitted, refused, cut := lines[0], lines[1], lines[2]

	require.Equal(t, "POST", admitted["method"])
	require.Equal(t, "/v1/chat/completions", admitted["path"])
	require.Equal(t, float64(200), admitted["status"])
	require.Contains(t, admitted, "duration_ms")
	require.Equal(t, "admitted", admitted["outcome"])
	require.Equal(t, "settled", admitted["end"])
	require.Equal(t, "acme-prod", admitted["key_id"])

	require.Equal(t, float64(429), refused["status"])
	require.Equal(t, "refused", refused["outcome"])
	require.Equal(t, "token_budget", refused["limit_type"])
	require.Equal(t, "api_key", refused["dimension"])

	require.Equal(t, "cut", cut["end"])
	require.Positive(t, cut["usage"], "a cut stream is charged what it delivered")
	require.Equal(t, identity.HashKey("sk-anon"), cut["key_hash"])

	all := sink.b.String()
	require.NotContains(t, all, "sk-logged", "the raw key is never logged")
	require.NotContains(t, all, "sk-anon")
	t.Logf("access log:\n%s", all)
}
