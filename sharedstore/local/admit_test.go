package local_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
)

func TestAReservationChargesEveryPeriodOfEveryDimension(t *testing.T) {
	f := newFixture(0)
	global := tokens("global", "", 300, minute(1000), day(5000))
	key := tokens("api_key", "h1", 300, minute(600), day(2000))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{global, key}})

	require.NoError(t, out.Err)
	require.True(t, out.Admitted())
	require.Equal(t, []float64{700, 4700}, levels(t, f.sd, global))
	require.Equal(t, []float64{300, 1700}, levels(t, f.sd, key))
	require.Equal(t, limit.BackendLocal, out.Hold.Backend)
	require.Len(t, out.Hold.Entries, 2)
	require.Equal(t, int64(300), out.Hold.Reserved())
	require.Equal(t, key.Limits, out.Hold.Entries[1].Limits, "the hold records the limits it was admitted under")
}

func TestRefusalReleasesEarlierDimensions(t *testing.T) {
	f := newFixture(0)
	global := tokens("global", "", 500, minute(1000), day(5000))
	key := tokens("api_key", "h1", 500, minute(600), day(2000))
	team := tokens("team", "research", 500, minute(400))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{global, key, team}})

	require.False(t, out.Admitted())
	require.NotNil(t, out.Refusal)
	require.Equal(t, limit.DimTeam, out.Refusal.Dimension)
	require.Equal(t, limit.PeriodMinute, out.Refusal.Budget)
	require.False(t, out.Refusal.Private)
	require.Equal(t, []float64{1000, 5000}, levels(t, f.sd, global), "global gave back its reservation")
	require.Equal(t, []float64{600, 2000}, levels(t, f.sd, key), "api_key gave back its reservation")
	require.Nil(t, levels(t, f.sd, team), "the refusing bucket took nothing")
	require.Empty(t, out.Hold.Entries)
}

func TestAMinuteRefusalNeverDrainsTheDayBudget(t *testing.T) {
	f := newFixture(0)
	key := tokens("api_key", "h1", 400, minute(600), day(100000))
	require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}}).Admitted())

	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
	require.False(t, out.Admitted())
	require.Equal(t, limit.PeriodMinute, out.Refusal.Budget)
	require.Equal(t, []float64{200, 99600}, levels(t, f.sd, key), "the day budget kept what the minute refused")
}

func TestADayRefusalNamesTheDayBudgetAndLeavesTheMinute(t *testing.T) {
	f := newFixture(0)
	key := tokens("api_key", "h1", 400, minute(600), day(500))
	require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}}).Admitted())
	f.clock.t += 60 * sec // the minute is whole again, the day is not

	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
	require.False(t, out.Admitted())
	require.Equal(t, limit.PeriodDay, out.Refusal.Budget)
	require.True(t, out.Refusal.Private)
	require.Equal(t, int64(500), out.Refusal.Level.Capacity)
	require.Equal(t, int64(100), out.Refusal.Level.Remaining)
	require.Equal(t, []float64{200, 100}, levels(t, f.sd, key), "a refusal writes nothing; refill stays lazy")
}

func TestZeroAllowanceRefusesEveryPositiveReservation(t *testing.T) {
	f := newFixture(0)
	zero := tokens("global", "", 1, limit.Limit{Budget: limit.PeriodMinute})
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{zero}})
	require.False(t, out.Admitted())
	require.Equal(t, int64(60), out.Refusal.RetryAfterSec, "a budget that never refills asks for one period")
}

func TestARequestLargerThanTheWholeBudgetIsRefusedAtOnceWithSizeAwareRetryAfter(t *testing.T) {
	f := newFixture(0)
	key := tokens("api_key", "h1", 1500, minute(600)) // refills 10 tokens a second
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
	require.False(t, out.Admitted(), "a full bucket still refuses what it can never hold")
	require.Equal(t, int64(150), out.Refusal.RetryAfterSec, "Retry-After is the request's whole cost at the refill rate")

	small := tokens("api_key", "h1", 450, minute(600))
	require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{small}}).Admitted())
	out = admit(t, f.store, limit.Plan{Tokens: []limit.Op{small}})
	require.Equal(t, int64(30), out.Refusal.RetryAfterSec, "Retry-After is the request's own shortfall at the refill rate")
	require.False(t, out.Refusal.ExceedsCapacity, "a request that fits once the bucket refills does not exceed it")
}

func TestARequestLargerThanTheBucketSaysSo(t *testing.T) {
	cases := []struct {
		name    string
		limits  []limit.Limit
		amount  int64
		budget  limit.Period
		exceeds bool
	}{
		{"larger than the minute", []limit.Limit{minute(600), day(100000)}, 1500, limit.PeriodMinute, true},
		{"larger than the day, the minute fits", []limit.Limit{minute(6000), day(1000)}, 1500, limit.PeriodDay, true},
		{"larger than a zero allowance", []limit.Limit{{Budget: limit.PeriodMinute}}, 1, limit.PeriodMinute, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(0)
			key := tokens("api_key", "h1", c.amount, c.limits...)
			out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
			require.False(t, out.Admitted())
			require.Equal(t, c.budget, out.Refusal.Budget)
			require.Equal(t, c.exceeds, out.Refusal.ExceedsCapacity)
		})
	}
}

func TestRequestCountUnitsStayConsumedOnATokenRefusal(t *testing.T) {
	f := newFixture(0)
	rps := requests("api_key", "h1", second(5, 1), minute(100))
	conc := inflight("api_key", "h1", 2)
	key := tokens("api_key", "h1", 900, minute(600))
	out := admit(t, f.store, limit.Plan{Requests: []limit.Op{rps, conc}, Tokens: []limit.Op{key}})

	require.False(t, out.Admitted())
	require.Equal(t, limit.KindTokens, out.Refusal.Kind)
	require.Equal(t, []float64{4, 99}, levels(t, f.sd, rps), "the request was counted")
	require.Equal(t, []float64{2}, levels(t, f.sd, conc), "the in-flight unit came back")
	require.Equal(t, []limit.OpLevel{
		{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodSecond, Level: limit.Level{Capacity: 5, Remaining: 4, ResetUnix: 1_700_000_001}},
		{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 100, Remaining: 99, ResetUnix: 1_700_000_001}},
		{Kind: limit.KindConcurrency, Dimension: limit.DimAPIKey, Budget: limit.PeriodConcurrent, Level: limit.Level{Capacity: 2, Remaining: 2, ResetUnix: 1_700_000_000}},
		{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 600, Remaining: 600, ResetUnix: 1_700_000_000}},
	}, out.Levels)
}

func TestARequestRefusalGivesBackEarlierRequestOps(t *testing.T) {
	f := newFixture(0)
	global := requests("global", "", second(100, 100))
	conc := inflight("global", "", 5)
	key := requests("api_key", "h1", second(1, 1))
	plan := limit.Plan{Requests: []limit.Op{global, conc, key}, Tokens: []limit.Op{tokens("global", "", 10, minute(100))}}
	require.True(t, admit(t, f.store, plan).Admitted())

	out := admit(t, f.store, plan)
	require.False(t, out.Admitted())
	require.Equal(t, limit.KindRequests, out.Refusal.Kind)
	require.Equal(t, limit.DimAPIKey, out.Refusal.Dimension)
	require.Equal(t, limit.PeriodSecond, out.Refusal.Budget)
	require.Equal(t, int64(1), out.Refusal.RetryAfterSec)
	require.Equal(t, []float64{99}, levels(t, f.sd, global), "only the admitted request is counted")
	require.Equal(t, []float64{4}, levels(t, f.sd, conc), "only the admitted request is in flight")
	require.Equal(t, []float64{90}, levels(t, f.sd, plan.Tokens[0]), "no token was reserved for the refused request")
}

func TestLevelsReportOnlyTheCallersOwnBuckets(t *testing.T) {
	f := newFixture(0)
	plan := limit.Plan{
		Requests: []limit.Op{requests("global", "", second(10, 10)), requests("api_key", "h1", minute(60))},
		Tokens:   []limit.Op{tokens("global", "", 100, minute(1000)), tokens("api_key", "h1", 100, minute(600), day(6000))},
	}
	out := admit(t, f.store, plan)
	require.True(t, out.Admitted())
	for _, l := range out.Levels {
		require.Equal(t, limit.DimAPIKey, l.Dimension)
	}
	require.Equal(t, []limit.OpLevel{
		{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 60, Remaining: 59, ResetUnix: 1_700_000_001}},
		{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 600, Remaining: 500, ResetUnix: 1_700_000_010}},
		{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodDay, Level: limit.Level{Capacity: 6000, Remaining: 5900, ResetUnix: 1_700_001_440}},
	}, out.Levels)
}

func TestAStoreThatCannotAnswerReportsAnErrorAndLeavesNothingBehind(t *testing.T) {
	f := newFixture(0)
	global := tokens("global", "", 100, minute(1000))
	rps := requests("global", "", second(10, 10))
	require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{global}}).Admitted())

	// A second worker writes garbage into the team bucket: the plan fails
	// there and gives back everything it took before.
	team := tokens("team", "t", 100, minute(1000))
	require.NoError(t, f.sd.Set(team.Key, []byte("not a bucket"), 0))
	out := admit(t, f.store, limit.Plan{Requests: []limit.Op{rps}, Tokens: []limit.Op{global, team}})
	require.Error(t, out.Err)
	require.Equal(t, []float64{900}, levels(t, f.sd, global))
	require.Equal(t, []float64{10}, levels(t, f.sd, rps), "an unanswered request is not counted")

	f.sd.FailGet = errors.New("host gone")
	out = admit(t, f.store, limit.Plan{Tokens: []limit.Op{global}})
	require.ErrorIs(t, out.Err, f.sd.FailGet)
}

// An admission lent a spare answers exactly what one without it answers;
// what it had to allocate stays in the spare, and the next admission lent
// the same spare writes its levels and hold entries there.
func TestALentSpareHoldsTheOutcomeAndServesTheNextAdmission(t *testing.T) {
	plan := func(amount int64) limit.Plan {
		return limit.Plan{
			Requests: []limit.Op{requests("api_key", "h1", minute(100)), inflight("api_key", "h1", 5)},
			Tokens:   []limit.Op{tokens("global", "", amount, minute(1000)), tokens("api_key", "h1", amount, minute(600), day(2000))},
		}
	}
	with, without := newFixture(0), newFixture(0)
	var spare local.Spare
	var kept []*limit.OpLevel
	for i, amount := range []int64{100, 200, 900} {
		var got limit.Outcome
		with.store.AdmitWith(plan(amount), &spare, func(o limit.Outcome) { got = o })
		want := admit(t, without.store, plan(amount))
		require.Equal(t, want, got, "admission %d", i)
		require.NotEmpty(t, got.Levels, "every admission reports the key's levels, a refusal too")
		require.Same(t, &spare.Levels[:1][0], &got.Levels[0], "the levels are written in the spare")
		if got.Admitted() {
			require.Same(t, &spare.Entries[:1][0], &got.Hold.Entries[0], "the hold's entries are written in the spare")
		}
		kept = append(kept, &got.Levels[0])
	}
	require.Same(t, kept[0], kept[2], "the spare was allocated once")
}
