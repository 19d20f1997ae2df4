package remote

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// spendCaller answers each call with the next canned body (status 200),
// standing in for a service whose spend answers the test chooses.
type spendCaller struct {
	answers []string
	paths   []string
	bodies  [][]byte
}

func (c *spendCaller) Call(headers [][2]string, body []byte, _ uint32, cb func(int, []byte, error)) error {
	for _, kv := range headers {
		if kv[0] == ":path" {
			c.paths = append(c.paths, kv[1])
		}
	}
	c.bodies = append(c.bodies, body)
	answer := `{"ended":true}`
	if len(c.answers) > 0 {
		answer, c.answers = c.answers[0], c.answers[1:]
	}
	cb(200, []byte(answer), nil)
	return nil
}

const spendHoldID = "00000000000000000000000000000abc"

func spendStore(c *spendCaller) *Store {
	return New(c, Config{Token: "t", NewHoldID: func() string { return spendHoldID }}, func() int64 { return 1 })
}

func spendPlan(t *testing.T) limit.Plan {
	t.Helper()
	const start = int64(1790812799_000_000_000) // 2026-09-30 23:59:59 UTC
	day, month, ok := calendar.Both(start)
	require.True(t, ok)
	p := spend.Policy{APIKey: "k1", Team: "eng"}
	p.Limits[spend.KeyDay] = spend.Limit{Amount: 5 * money.OneUSD, Set: true}
	return limit.Plan{Spend: limit.Spend{Policy: p, Day: day, Month: month, Start: start, Model: "gpt-4o"}}
}

func admitOnce(t *testing.T, s *Store, plan limit.Plan) limit.Outcome {
	t.Helper()
	var out limit.Outcome
	n := 0
	s.Admit(plan, func(o limit.Outcome) { out = o; n++ })
	require.Equal(t, 1, n)
	return out
}

func TestAServiceThatDoesNotCheckSpendIsUnavailableNeverNoLimit(t *testing.T) {
	c := &spendCaller{answers: []string{`{"admitted":true,"hold":"` + spendHoldID + `"}`}}
	out := admitOnce(t, spendStore(c), spendPlan(t))
	require.ErrorIs(t, out.Err, limit.ErrSpendUnavailable)
	req, err := wire.DecodeAdmitRequest(c.bodies[0])
	require.NoError(t, err)
	require.NotNil(t, req.Spend, "the admission carried the spend part")
	require.Equal(t, spendHoldID, req.HoldID, "a spend-only plan is named too")
	require.Equal(t, []string{wire.PathAdmit, wire.PathRelease}, c.paths, "whatever the service kept under the id is released")
}

func TestASpendVerdictReachesTheOutcomeAndTheSettlementCarriesTheRecord(t *testing.T) {
	c := &spendCaller{answers: []string{`{"admitted":true,"hold":"` + spendHoldID +
		`","spend":{"checked":true,"usage":[{"slot":"api_key_day","used_nano_usd":1500000000}]}}`}}
	s := spendStore(c)
	out := admitOnce(t, s, spendPlan(t))
	require.NoError(t, out.Err)
	require.True(t, out.Admitted())
	require.Equal(t, money.Amount(1_500_000_000), out.Spend[spend.KeyDay])
	require.Equal(t, spendPlan(t).Spend, out.Hold.Spend)

	h := out.Hold
	h.SpendCost, h.SpendUsage = 42, tokens.Kinds{Input: 3, Output: 4}
	s.Settle(h, 7)
	require.Equal(t, wire.PathSettle, c.paths[1])
	settle, err := wire.DecodeSettleRequest(c.bodies[1])
	require.NoError(t, err)
	require.Equal(t, &wire.SpendRecord{APIKey: "k1", Team: "eng", Model: "gpt-4o", Start: 1790812799_000_000_000,
		Day: 20260930, Month: 202609, Slots: []string{"api_key_day"}, Usage: wire.SpendKinds{Input: 3, Output: 4}, CostNanoUSD: 42}, settle.Spend)
}

func TestASpendRefusalFromTheServiceIsTheOutcome(t *testing.T) {
	c := &spendCaller{answers: []string{`{"admitted":false,"spend":{"checked":true,"usage":[{"slot":"api_key_day","used_nano_usd":5000000000}],` +
		`"refusal":{"slot":"api_key_day","limit_nano_usd":5000000000,"used_nano_usd":5000000000}}}`}}
	out := admitOnce(t, spendStore(c), spendPlan(t))
	require.NoError(t, out.Err)
	require.False(t, out.Admitted())
	require.Equal(t, &spend.Exceeded{Slot: spend.KeyDay, Limit: 5 * money.OneUSD, Used: 5 * money.OneUSD}, out.SpendRefusal)
	require.Equal(t, []string{wire.PathAdmit}, c.paths, "a refusal committed nothing: no release")
}

func TestAPlanWithoutSpendNeedsNoVerdict(t *testing.T) {
	c := &spendCaller{answers: []string{`{"admitted":true}`}}
	out := admitOnce(t, spendStore(c), limit.Plan{Requests: []limit.Op{{Key: "r", Kind: limit.KindRequests,
		Dimension: limit.DimGlobal, Amount: 1, Limits: []limit.Limit{{Budget: limit.PeriodSecond, Capacity: 1, RefillPerSec: 1}}}}})
	require.NoError(t, out.Err)
	require.True(t, out.Admitted())
	req, err := wire.DecodeAdmitRequest(c.bodies[0])
	require.NoError(t, err)
	require.Nil(t, req.Spend)
}

// A hold the service never held (a fallback admission) has its record
// delivered as a settlement under a fresh hold id that ends no bucket; a
// hold without a spend part sends nothing. The release of a hold that
// reserved spend names its team, where the reservation sits.
func TestAFallbackRecordIsSettledUnderAFreshHoldIDAndAReleaseNamesTheTeam(t *testing.T) {
	c := &spendCaller{}
	s := spendStore(c)
	sp := spendPlan(t).Spend
	s.Record(limit.Hold{Backend: limit.BackendLocal, Spend: sp, SpendCost: 7, SpendUsage: tokens.Kinds{Input: 3}})
	require.Equal(t, []string{wire.PathSettle}, c.paths)
	req, err := wire.DecodeSettleRequest(c.bodies[0])
	require.NoError(t, err)
	require.Equal(t, spendHoldID, req.Hold)
	require.Empty(t, req.Keys)
	require.NotNil(t, req.Spend)
	require.Equal(t, int64(7), req.Spend.CostNanoUSD)

	s.Record(limit.Hold{Backend: limit.BackendLocal})
	require.Len(t, c.paths, 1, "nothing to record")

	sp.Reserve = 5
	s.Release(limit.Hold{Backend: limit.BackendRemote, ID: spendHoldID, Spend: sp})
	rel, err := wire.DecodeReleaseRequest(c.bodies[1])
	require.NoError(t, err)
	require.True(t, rel.Spend)
	require.Equal(t, "eng", rel.Team)
}
