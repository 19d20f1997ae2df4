package refusal

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// A reader that does not see the headers the filter wrote looks among them
// only for a name MayWrite admits: every success header must be one, and
// none of the response headers the exchange reads for itself.
func TestEverySuccessHeaderIsANameTheFilterMayWrite(t *testing.T) {
	const now = 1_800_000_000
	var levels []limit.OpLevel
	for _, kind := range []limit.Kind{limit.KindRequests, limit.KindTokens, limit.KindConcurrency} {
		for _, budget := range []limit.Period{limit.PeriodSecond, limit.PeriodMinute, limit.PeriodDay} {
			levels = append(levels, limit.OpLevel{Kind: kind, Dimension: limit.DimAPIKey, Budget: budget,
				Level: limit.Level{Capacity: 100, Remaining: 50, ResetUnix: now + 60}})
		}
	}
	var b HeaderBuffer
	b.AppendSuccess(levels)
	headers := AppendCompatHeaders(b.List, levels, Styles{OpenAI: true, IETF: true}, now)
	day, month := windows(t, "2026-09-08T15:04:05Z")
	p := spend.Policy{Limits: [spend.NumSlots]spend.Limit{spend.KeyDay: {Amount: money.OneUSD, Set: true}, spend.KeyMonth: {Amount: money.OneUSD, Set: true}}}
	headers = AppendSpendHeaders(headers, &p, &spend.Usage{}, day, month)

	seen := map[string]bool{}
	for _, h := range headers {
		require.True(t, MayWrite(h.Name), "%s is written but MayWrite says no", h.Name)
		seen[h.Name] = true
	}
	require.Len(t, seen, 5*3+6+2+6, "every family, both compat styles, both spend windows")
	for _, name := range []string{":status", "content-type", "content-encoding", "x-cache", "x-request-id", "ratelimit-x", "r", ""} {
		require.False(t, MayWrite(name), name)
	}
}
