//go:build !wasip1

package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// The filter's own pricing section: fallbacks (cached_input absent is
// input), a long-context tier, a per-request price and a default.
const filterPricing = `{
	"gpt-4o": {"input": "2.50", "cached_input": "1.25", "output": "10.00"},
	"long": {"input": 1.25, "output": 10, "per_request": "0.001",
		"above_input_tokens": 200000, "tier": {"input": "2.5", "output": "15"}},
	"default": {"input": "3", "output": "12"}
}`

func TestAPriceListIsPutInTheFiltersFormatAndListedSoItCanBePutAgain(t *testing.T) {
	f := newFixture(t)
	out := f.ok("PUT", "/v1/admin/prices", `{"effective_from":"2026-10-01T02:00:00+02:00","pricing":`+filterPricing+`}`)
	require.Equal(t, "2026-10-01T00:00:00Z", out["effective_from"], "kept in UTC")
	gpt := out["pricing"].(map[string]any)["gpt-4o"]
	require.Equal(t, map[string]any{"input": "2.50", "cached_input": "1.25", "cache_write": "2.50",
		"cache_write_1h": "2.50", "output": "10.00"}, gpt, "every fallback written as the rate it resolved to")

	lists, err := f.ledger.Prices(context.Background())
	require.NoError(t, err)
	require.Len(t, lists, 1)
	long := lists[0].Models["long"]
	require.Equal(t, int64(200_000), long.AboveInputTokens)
	require.Equal(t, usd(t, "0.001"), long.PerRequest)
	require.NotNil(t, lists[0].Default)
	// 1000 output tokens of an unlisted model at the default's $12 per million.
	require.Equal(t, usd(t, "0.012"), pricing.Cost(tokens.Kinds{Output: 1000}, *lists[0].Default))

	// What GET lists is a body PUT takes, and it stores the same entries.
	f.now = time.Date(2026, 10, 15, 0, 0, 0, 0, time.UTC)
	listed := f.ok("GET", "/v1/admin/prices", "")["price_lists"].([]any)
	require.Len(t, listed, 1)
	require.Equal(t, true, listed[0].(map[string]any)["in_effect"])
	again, err := json.Marshal(listed[0].(map[string]any)["pricing"])
	require.NoError(t, err)
	f.ok("PUT", "/v1/admin/prices", `{"effective_from":"2026-11-01T00:00:00Z","pricing":`+string(again)+`}`)
	lists, err = f.ledger.Prices(context.Background())
	require.NoError(t, err)
	require.Len(t, lists, 2)
	require.Equal(t, lists[0].Models, lists[1].Models)
	require.Equal(t, lists[0].Default, lists[1].Default)

	listed = f.ok("GET", "/v1/admin/prices", "")["price_lists"].([]any)
	require.Equal(t, []any{true, false}, []any{listed[0].(map[string]any)["in_effect"], listed[1].(map[string]any)["in_effect"]},
		"the November list is not in effect on October 15")
}

func TestAPriceChangeAppliesFromItsEffectiveTime(t *testing.T) {
	f := newFixture(t)
	f.ok("PUT", "/v1/admin/prices", `{"effective_from":"2026-09-01T00:00:00Z","pricing":{"m":{"input":"1","output":"1"}}}`)
	f.ok("PUT", "/v1/admin/prices", `{"effective_from":"2026-10-01T00:00:00Z","pricing":{"m":{"input":"3","output":"3"}}}`)
	before := time.Date(2026, 9, 30, 23, 59, 59, 0, time.UTC)
	f.charge(record("r1", "research", "k", "", 1_000_000, before, 0), record("r2", "research", "k", "", 1_000_000, before.Add(time.Second), 0))
	got, err := f.ledger.Aggregates(context.Background(), "research", "202609")
	require.NoError(t, err)
	require.Equal(t, usd(t, "1"), got[0].Amount, "a call started before the change is charged the old price")
	got, err = f.ledger.Aggregates(context.Background(), "research", "202610")
	require.NoError(t, err)
	require.Equal(t, usd(t, "3"), got[0].Amount, "a call started at the change is charged the new price")
}

func TestABadPriceListIsRefusedWithThePathOfItsProblemAndStoresNothing(t *testing.T) {
	f := newFixture(t)
	f.ok("PUT", "/v1/admin/prices", `{"effective_from":"2026-10-01T00:00:00Z","pricing":{"m":{"input":"1","output":"1"}}}`)
	tests := []struct {
		name, body, want string
		status           int
	}{
		{"same instant", `{"effective_from":"2026-10-01T00:00:00Z","pricing":{"m":{"input":"2","output":"2"}}}`,
			"a price list already takes effect at 2026-10-01T00:00:00Z", http.StatusConflict},
		{"misspelt rate", `{"effective_from":"2026-11-01T00:00:00Z","pricing":{"m":{"inptu":"2","output":"2"}}}`,
			`pricing.m: unknown field "inptu" (did you mean "input"?)`, http.StatusBadRequest},
		{"missing output", `{"effective_from":"2026-11-01T00:00:00Z","pricing":{"m":{"input":"2"}}}`,
			"pricing.m.output: is required", http.StatusBadRequest},
		{"inexact rate", `{"effective_from":"2026-11-01T00:00:00Z","pricing":{"m":{"input":"0.0000000001","output":"2"}}}`,
			"pricing.m.input: has more than 9 decimal places", http.StatusBadRequest},
		{"repeated model", `{"effective_from":"2026-11-01T00:00:00Z","pricing":{"m":{"input":"1","output":"1"},"m":{"input":"0","output":"0"}}}`,
			`duplicate`, http.StatusBadRequest},
		{"no models", `{"effective_from":"2026-11-01T00:00:00Z","pricing":{}}`, "pricing: lists no model", http.StatusBadRequest},
		{"pricing not an object", `{"effective_from":"2026-11-01T00:00:00Z","pricing":[]}`, "pricing: must be an object", http.StatusBadRequest},
		{"no instant", `{"pricing":{"m":{"input":"1","output":"1"}}}`, "body: effective_from is required", http.StatusBadRequest},
		{"bad instant", `{"effective_from":"October 1st","pricing":{"m":{"input":"1","output":"1"}}}`,
			`effective_from "October 1st": must be an RFC 3339 time`, http.StatusBadRequest},
		{"before 1970", `{"effective_from":"1969-12-31T23:00:00Z","pricing":{"m":{"input":"1","output":"1"}}}`,
			"must lie between 1970 and 9999", http.StatusBadRequest},
		{"unknown member", `{"effective_from":"2026-11-01T00:00:00Z","pricing":{"m":{"input":"1","output":"1"}},"currency":"EUR"}`,
			`unknown member "currency"`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, out := f.call("PUT", "/v1/admin/prices", tt.body)
			require.Equal(t, tt.status, st, "%v", out)
			require.Contains(t, out["error"], tt.want)
		})
	}
	lists, err := f.ledger.Prices(context.Background())
	require.NoError(t, err)
	require.Len(t, lists, 1)
	require.Equal(t, map[string]pricing.Entry{"m": {Base: pricing.Rates{Input: 1e9, CachedInput: 1e9, CacheWrite: 1e9,
		CacheWrite1h: 1e9, Output: 1e9}}}, lists[0].Models)
}
