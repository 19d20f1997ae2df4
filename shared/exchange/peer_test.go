package exchange

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// The peer's address costs a host call and a parse; it is asked for only
// when a rule reads it (a per-client limit, a whitelist), and a client's
// limit is then planned on it.
func TestThePeerAddressIsReadOnlyWhenARuleUsesIt(t *testing.T) {
	for _, c := range []struct {
		name        string
		cfg         string
		read        bool
		clientLimit bool
	}{
		{"no client limit, no whitelist", keyBudget, false, false},
		{"a per-client token budget", `{"rate_limiting":{"limits":{"per_client":{"tokens_per_minute":1000000}}}}`, true, true},
		{"a per-client request limit", `{"rate_limiting":{"limits":{"per_client":{"requests_per_minute":1000}}}}`, true, true},
		{"a whitelist", `{"rate_limiting":{"whitelist":["192.0.2.0/24"],"limits":{"per_api_key":{"tokens_per_minute":1000000}}}}`, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.cfg)
			req := &countingRequest{request: chat(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`), reads: map[string]int{}}
			require.Equal(t, Continue, r.x.RequestHeaders(req, false))
			r.x.RequestBody(req, len(req.body), true)
			require.Equal(t, c.read, req.reads["source/address"] == 1, "reads: %v", req.reads)
			client := false
			p := r.plan()
			for _, op := range append(p.Tokens, p.Requests...) {
				client = client || (op.Dimension == limit.DimClient && op.Key != "")
			}
			require.Equal(t, c.clientLimit, client)
		})
	}
}
