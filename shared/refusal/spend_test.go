package refusal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

func windows(t *testing.T, at string) (day, month calendar.Window) {
	t.Helper()
	ts, err := time.Parse(time.RFC3339, at)
	require.NoError(t, err)
	day, month, ok := calendar.Both(ts.UnixNano())
	require.True(t, ok)
	return day, month
}

func TestSpendRefusalBodyIsTheSeedsWithDetails(t *testing.T) {
	day, _ := windows(t, "2026-09-08T15:04:05Z")
	status, body, headers := SpendRefusal(spend.Exceeded{Slot: spend.KeyDay, Limit: 5 * money.OneUSD, Used: 5_020_000_000}, day.End)
	require.Equal(t, 429, status)
	require.Equal(t, `{"error":{"type":"insufficient_quota","code":"spend_limit_exceeded","message":"API Key daily spend limit exceeded.",`+
		`"details":{"scope":"api_key","period":"day","period_end":"2026-09-09T00:00:00Z","limit_usd":"5.00","usage_usd":"5.02"}}}`, string(body))
	h := headerMap(t, headers)
	require.Equal(t, map[string]string{"content-type": "application/json", "x-should-retry": "false"}, h, "no Retry-After: waiting for the period end is the only cure")
}

func TestSpendRefusalNamesEveryScopeAndPeriodAndShowsFiguresOnlyForTheCallersKey(t *testing.T) {
	day, month := windows(t, "2026-09-30T23:59:59Z")
	tests := []struct {
		slot    spend.Slot
		message string
		end     string
		figures bool
	}{
		{spend.TeamMonth, "Team monthly spend limit exceeded.", "2026-10-01T00:00:00Z", false},
		{spend.KeyDay, "API Key daily spend limit exceeded.", "2026-10-01T00:00:00Z", true},
		{spend.KeyMonth, "API Key monthly spend limit exceeded.", "2026-10-01T00:00:00Z", true},
		{spend.UserDay, "User daily spend limit exceeded.", "2026-10-01T00:00:00Z", false},
		{spend.UserMonth, "User monthly spend limit exceeded.", "2026-10-01T00:00:00Z", false},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			end := day.End
			if tt.slot.Period() == calendar.Month {
				end = month.End
			}
			_, body, _ := SpendRefusal(spend.Exceeded{Slot: tt.slot, Limit: 200 * money.OneUSD, Used: 201 * money.OneUSD}, end)
			var v struct {
				Error struct {
					Type, Code, Message string
					Details             map[string]string
				}
			}
			require.NoError(t, json.Unmarshal(body, &v), string(body))
			require.Equal(t, "insufficient_quota", v.Error.Type)
			require.Equal(t, "spend_limit_exceeded", v.Error.Code)
			require.Equal(t, tt.message, v.Error.Message)
			require.Equal(t, tt.slot.Scope().String(), v.Error.Details["scope"])
			require.Equal(t, tt.slot.Period().String(), v.Error.Details["period"])
			require.Equal(t, tt.end, v.Error.Details["period_end"])
			if tt.figures {
				require.Equal(t, "200.00", v.Error.Details["limit_usd"])
				require.Equal(t, "201.00", v.Error.Details["usage_usd"])
			} else {
				require.NotContains(t, string(body), "limit_usd")
				require.NotContains(t, string(body), "usage_usd")
				require.NotContains(t, string(body), "200", "a shared scope's limit is not the caller's to read")
			}
		})
	}
}

func TestSpendHeadersShowOnlyTheCallersOwnKeyLimits(t *testing.T) {
	day, month := windows(t, "2026-09-08T15:04:05Z")
	all := spend.Policy{Limits: [spend.NumSlots]spend.Limit{
		spend.TeamMonth: {Amount: 200 * money.OneUSD, Set: true},
		spend.KeyDay:    {Amount: 5 * money.OneUSD, Set: true},
		spend.KeyMonth:  {Amount: 50 * money.OneUSD, Set: true},
		spend.UserDay:   {Amount: 7 * money.OneUSD, Set: true},
	}}
	tests := []struct {
		name   string
		policy spend.Policy
		used   spend.Usage
		want   map[string]string
	}{
		{"both key periods", all, spend.Usage{spend.KeyDay: 20_000_000, spend.KeyMonth: 12_345_678_901, spend.TeamMonth: 199 * money.OneUSD},
			map[string]string{
				"x-spend-day-limit-usd": "5.00", "x-spend-day-remaining-usd": "4.98", "x-spend-day-reset": "1788912000",
				"x-spend-month-limit-usd": "50.00", "x-spend-month-remaining-usd": "37.654321099", "x-spend-month-reset": "1790812800",
			}},
		{"remaining never goes below zero", spend.Policy{Limits: [spend.NumSlots]spend.Limit{spend.KeyMonth: {Amount: money.OneUSD, Set: true}}},
			spend.Usage{spend.KeyMonth: 3 * money.OneUSD},
			map[string]string{"x-spend-month-limit-usd": "1.00", "x-spend-month-remaining-usd": "0.00", "x-spend-month-reset": "1790812800"}},
		{"a limit of 0 shows as 0", spend.Policy{Limits: [spend.NumSlots]spend.Limit{spend.KeyDay: {Set: true}}}, spend.Usage{},
			map[string]string{"x-spend-day-limit-usd": "0.00", "x-spend-day-remaining-usd": "0.00", "x-spend-day-reset": "1788912000"}},
		{"team and user limits only: no headers", spend.Policy{Limits: [spend.NumSlots]spend.Limit{spend.TeamMonth: {Set: true}, spend.UserMonth: {Set: true}}}, spend.Usage{}, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := headerMap(t, AppendSpendHeaders(nil, &tt.policy, &tt.used, day, month))
			require.Equal(t, tt.want, got)
		})
	}
	require.Equal(t, int64(1788912000), day.End, "2026-09-09T00:00:00Z")
	require.Equal(t, int64(1790812800), month.End, "2026-10-01T00:00:00Z")
}

func TestSpendHeadersCostOneAllocation(t *testing.T) {
	day, month := windows(t, "2026-09-08T15:04:05Z")
	p := spend.Policy{Limits: [spend.NumSlots]spend.Limit{spend.KeyDay: {Amount: 5 * money.OneUSD, Set: true}, spend.KeyMonth: {Amount: 50 * money.OneUSD, Set: true}}}
	var used spend.Usage
	dst := make([]Header, 0, 8)
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() {
		dst = AppendSpendHeaders(dst[:0], &p, &used, day, month)
	}))
	require.Len(t, dst, 6)
}

func TestModelNotPricedIsA400NamingTheModel(t *testing.T) {
	t.Parallel()
	status, body, headers := ModelNotPriced("gpt-9")
	require.Equal(t, 400, status)
	require.Equal(t, `{"error":{"type":"invalid_request_error","code":"model_not_priced","param":"model","message":"No price is configured for model \"gpt-9\", and a spend limit applies to this request; ask the operator to add it to the pricing section."}}`, string(body))
	require.Equal(t, map[string]string{"content-type": "application/json", "x-should-retry": "false"}, headerMap(t, headers))

	_, body, _ = ModelNotPriced("evil\"}\n\xff" + strings.Repeat("m", 1000))
	var v struct{ Error struct{ Message string } }
	require.NoError(t, json.Unmarshal(body, &v), "a client-chosen name is escaped")
	require.Less(t, len(v.Error.Message), 400, "and bounded")
}

func FuzzSpendRefusalIsAlwaysValidJSON(f *testing.F) {
	f.Add(uint8(spend.KeyDay), int64(5e9), int64(6e9), int64(1788912000))
	f.Add(uint8(200), int64(-1), int64(-9e18), int64(-5))
	f.Fuzz(func(t *testing.T, slot uint8, limit, used, end int64) {
		_, body, _ := SpendRefusal(spend.Exceeded{Slot: spend.Slot(slot), Limit: money.Amount(limit), Used: money.Amount(used)}, end)
		require.True(t, json.Valid(body), string(body))
	})
}

func TestSpendUnavailableIsA503WithRetryAfter(t *testing.T) {
	t.Parallel()
	status, body, headers := SpendUnavailable(5)
	require.Equal(t, 503, status)
	require.Equal(t, `{"error":{"type":"service_unavailable","code":"spend_store_unavailable","message":"The spend-limit store is unavailable. Retry after 5 seconds.","details":{"retry_after_seconds":5}}}`, string(body))
	require.Equal(t, map[string]string{"content-type": "application/json", "retry-after": "5"}, headerMap(t, headers))
	_, _, headers = SpendUnavailable(0)
	require.Equal(t, "1", headerMap(t, headers)["retry-after"], "never ask for a retry now")
}

func TestAnExhaustedTeamBalanceIsRefusedWithBalanceExhaustedAndNoFigures(t *testing.T) {
	status, body, headers := SpendRefusal(spend.Exceeded{Balance: true, Used: 7}, 0)
	require.Equal(t, 429, status)
	require.Equal(t, `{"error":{"type":"insufficient_quota","code":"balance_exhausted","message":"Team balance exhausted."}}`, string(body))
	require.Equal(t, map[string]string{"content-type": "application/json", "x-should-retry": "false"}, headerMap(t, headers))
	var v map[string]any
	require.NoError(t, json.Unmarshal(body, &v))
}
