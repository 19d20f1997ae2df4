package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fleetSpendConfig is a fleet config whose key sk-fleet-spend has a $5 day
// limit; sk-fleet-plain has none.
func fleetSpendConfig(fallback bool) string {
	cfg := fleetConfig(`{"per_api_key":{"tokens_per_minute":100000}}`, fleetToken, 2000, fallback)
	return strings.TrimSuffix(cfg, "}") + `,"pricing":{"gpt-4o":{"input":"2.50","output":"10"}},` +
		`"api_keys":[{"key":"sk-fleet-spend","id":"fs","spend_limit_day_usd":5},{"key":"sk-fleet-plain","id":"fp"}]}`
}

// The sharedstore service does not check spend yet (its ledger is the next
// step): its answer carries no spend verdict, and the filter must not read
// that as "no limit".
func TestFleetAServiceThatDoesNotCheckSpendIsNeverReadAsNoLimit(t *testing.T) {
	t.Run("fallback_to_memory false: 503 spend_store_unavailable", func(t *testing.T) {
		f := startFleet(t, fleetSpendConfig(false))
		r := post(t, f.a, "/v1/chat/completions", "sk-fleet-spend", chat(10), "x-mock-output-tokens", "5")
		require.Equal(t, 503, r.status, string(r.body))
		require.Contains(t, string(r.body), `"code":"spend_store_unavailable"`)
		require.Equal(t, "5", r.header.Get("retry-after"))
		plain := post(t, f.a, "/v1/chat/completions", "sk-fleet-plain", chat(10), "x-mock-output-tokens", "5")
		require.Equal(t, 200, plain.status, "a request no spend limit applies to is not affected: %s", plain.body)
	})
	t.Run("fallback_to_memory true: the per-Envoy counters check it", func(t *testing.T) {
		f := startFleet(t, fleetSpendConfig(true))
		r := post(t, f.a, "/v1/chat/completions", "sk-fleet-spend", chat(10), "x-mock-output-tokens", "5")
		require.Equal(t, 200, r.status, string(r.body))
		require.Equal(t, "5.00", r.header.Get("x-spend-day-limit-usd"))
	})
}
