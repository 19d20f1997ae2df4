package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// 2026-09-30 23:59:59.5 UTC.
const sep30Late = int64(1790812799_500_000_000)

func sampleSpend(t testing.TB) limit.Spend {
	t.Helper()
	day, month, ok := calendar.Both(sep30Late)
	require.True(t, ok)
	p := spend.Policy{Team: "eng", APIKey: `k"1`, User: "alice"}
	p.Limits[spend.KeyDay] = spend.Limit{Amount: 5 * money.OneUSD, Set: true}
	p.Limits[spend.TeamMonth] = spend.Limit{Amount: 0, Set: true}
	return limit.Spend{Policy: p, Day: day, Month: month, Start: sep30Late, Model: "gpt-4o"}
}

func TestTheSpendPartTravelsWithTheAdmission(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	for _, plan := range []limit.Plan{
		{Tokens: samplePlan("k").Tokens, Spend: sampleSpend(t)},
		{Spend: sampleSpend(t)},
		{Spend: limit.Spend{Policy: spend.Policy{Team: "eng", APIKey: "k"}, Day: sampleSpend(t).Day, Month: sampleSpend(t).Month,
			Start: sep30Late, Fleet: true}}, // only the fleet ledger's limits
		samplePlan("no spend"),
	} {
		b := AppendAdmitHold(nil, plan, id)
		var got AdmitRequest
		require.NoError(t, json.Unmarshal(b, &got), string(b))
		want := FromPlan(plan)
		want.HoldID = id
		require.Equal(t, want, got, string(b))
		decoded, err := DecodeAdmitRequest(b)
		require.NoError(t, err)
		require.Equal(t, want, decoded)

		sp, err := decoded.Spend.Spend()
		require.NoError(t, err)
		wantSpend := plan.Spend
		wantSpend.Model = "" // the admission needs no model; the record carries it
		require.Equal(t, wantSpend, sp)
	}
	require.Nil(t, FromPlan(samplePlan("k")).Spend, "no limit: no spend member at all")
}

func TestASpendPartWhosePeriodsAreNotItsStartsIsRefused(t *testing.T) {
	a := FromSpend(sampleSpend(t))
	a.Day = 20261001
	_, err := a.Spend()
	require.Error(t, err)
	a = FromSpend(sampleSpend(t))
	a.Limits[0].Slot = "team_day"
	_, err = a.Spend()
	require.Error(t, err, "teams have no day limit")
}

func TestAnAnswerMustCheckTheSpendPart(t *testing.T) {
	sp := sampleSpend(t)
	cases := []struct {
		name    string
		answer  string
		refusal *spend.Exceeded
		used    spend.Usage
		err     bool
	}{
		{"a service that ignores spend (no member)", `{"admitted":true}`, nil, spend.Usage{}, true},
		{"checked false", `{"admitted":true,"spend":{"checked":false}}`, nil, spend.Usage{}, true},
		{"null", `{"admitted":true,"spend":null}`, nil, spend.Usage{}, true},
		{"the ledger failed its lookup", `{"admitted":false,"spend":{"checked":true,"unavailable":true}}`, nil, spend.Usage{}, true},
		{"usage for a slot the request has no limit on", `{"admitted":true,"spend":{"checked":true,"usage":[{"slot":"user_day","used_nano_usd":1}]}}`, nil, spend.Usage{}, true},
		{"negative usage", `{"admitted":true,"spend":{"checked":true,"usage":[{"slot":"api_key_day","used_nano_usd":-1}]}}`, nil, spend.Usage{}, true},
		{"checked, with room", `{"admitted":true,"spend":{"checked":true,"usage":[{"slot":"api_key_day","used_nano_usd":7},{"slot":"team_month","used_nano_usd":0}]}}`,
			nil, spend.Usage{spend.KeyDay: 7}, false},
		{"refused", `{"admitted":false,"spend":{"checked":true,"refusal":{"slot":"team_month","limit_nano_usd":0,"used_nano_usd":3}}}`,
			&spend.Exceeded{Slot: spend.TeamMonth, Used: 3}, spend.Usage{}, false},
		{"refused by the team's balance", `{"admitted":false,"spend":{"checked":true,"refusal":{"slot":"balance","limit_nano_usd":0,"used_nano_usd":2}}}`,
			&spend.Exceeded{Balance: true, Used: 2}, spend.Usage{}, false},
		{"refused by a user limit stored in the fleet ledger, which the filter does not configure",
			`{"admitted":false,"spend":{"checked":true,"refusal":{"slot":"user_month","limit_nano_usd":9,"used_nano_usd":10}}}`,
			&spend.Exceeded{Slot: spend.UserMonth, Limit: 9, Used: 10}, spend.Usage{}, false},
		{"refused on a slot that does not exist", `{"admitted":false,"spend":{"checked":true,"refusal":{"slot":"team_day","limit_nano_usd":9,"used_nano_usd":10}}}`,
			nil, spend.Usage{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeAdmitResponse([]byte(c.answer))
			require.NoError(t, err)
			var std AdmitResponse
			require.NoError(t, json.Unmarshal([]byte(c.answer), &std))
			require.Equal(t, std, r, "decoded as encoding/json does")
			var o limit.Outcome
			err = r.SpendOutcome(&o, &sp)
			if c.err {
				require.ErrorIs(t, err, limit.ErrSpendUnavailable)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.refusal, o.SpendRefusal)
			require.Equal(t, c.used, o.Spend)
			if c.refusal != nil {
				require.Equal(t, limit.ResultSpendRefused, o.Result, "a spend or balance refusal is the verdict")
			}
		})
	}
	var o limit.Outcome
	require.NoError(t, AdmitResponse{Admitted: true}.SpendOutcome(&o, &limit.Spend{}), "no spend part: nothing to check")
}

func TestTheVerdictRoundTripsThroughTheAnswer(t *testing.T) {
	sp := sampleSpend(t)
	o := limit.Outcome{Spend: spend.Usage{spend.KeyDay: 5 * money.OneUSD, spend.TeamMonth: 0},
		SpendRefusal: &spend.Exceeded{Slot: spend.KeyDay, Limit: 5 * money.OneUSD, Used: 5 * money.OneUSD}}
	r := AdmitResponse{Spend: VerdictOf(o, &sp.Policy)}
	b := AppendAdmitResponse(nil, r)
	var std AdmitResponse
	require.NoError(t, json.Unmarshal(b, &std), string(b))
	require.Equal(t, r, std)
	got, err := DecodeAdmitResponse(b)
	require.NoError(t, err)
	var back limit.Outcome
	require.NoError(t, got.SpendOutcome(&back, &sp))
	require.Equal(t, o.Spend, back.Spend)
	require.Equal(t, o.SpendRefusal, back.SpendRefusal)
}

func TestTheSettlementCarriesTheInferenceRecord(t *testing.T) {
	h := limit.Hold{Backend: limit.BackendRemote, ID: "0123456789abcdef0123456789abcdef", Spend: sampleSpend(t),
		SpendCost: 1_234_567, SpendUsage: tokens.Kinds{Input: 10, CachedInput: 20, CacheWrite: 3, CacheWrite1h: 4, Output: 50}}
	b := AppendSettleRecord(nil, h.ID, 87, []string{"a", "b"}, RecordOf(h))
	var std SettleRequest
	require.NoError(t, json.Unmarshal(b, &std), string(b))
	want := SettleRequest{Hold: h.ID, Actual: 87, Keys: []string{"a", "b"}, Spend: &SpendRecord{
		Team: "eng", APIKey: `k"1`, User: "alice", Model: "gpt-4o", Start: sep30Late, Day: 20260930, Month: 202609,
		Slots: []string{"team_month", "api_key_day"}, Usage: SpendKinds{10, 20, 3, 4, 50}, CostNanoUSD: 1_234_567}}
	require.Equal(t, want, std, "September 30 and September, whenever it settles")
	got, err := DecodeSettleRequest(b)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, h.SpendUsage, got.Spend.Usage.Kinds())

	require.Nil(t, RecordOf(limit.Hold{ID: h.ID}), "a hold without spend carries no record")
	require.Equal(t, string(AppendSettle(nil, h.ID, 87, nil)), string(AppendSettleRecord(nil, h.ID, 87, nil, nil)))
}

func TestARefusalOnTheUserOfACallWithoutOneIsUnavailable(t *testing.T) {
	noUser := sampleSpend(t)
	noUser.Policy.User = ""
	r, err := DecodeAdmitResponse([]byte(`{"admitted":false,"spend":{"checked":true,"refusal":{"slot":"user_day","limit_nano_usd":0,"used_nano_usd":0}}}`))
	require.NoError(t, err)
	var o limit.Outcome
	require.ErrorIs(t, r.SpendOutcome(&o, &noUser), limit.ErrSpendUnavailable, "a call without a user has no user counter to refuse on")
}
