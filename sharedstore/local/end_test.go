package local_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

func TestSettleRefundsUnusedAndChargesOverage(t *testing.T) {
	cases := []struct {
		name   string
		actual int64
		after  []float64
	}{
		{"less usage refunds the difference on every period", 120, []float64{480, 1880}},
		{"exact usage keeps the reservation", 300, []float64{300, 1700}},
		{"more usage charges the overage on every period", 350, []float64{250, 1650}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(0)
			key := tokens("api_key", "h1", 300, minute(600), day(2000))
			out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
			require.True(t, out.Admitted())
			f.store.Settle(out.Hold, c.actual)
			f.store.Flush() // a refund reaches shared data on the tick
			require.Equal(t, c.after, levels(t, f.sd, key))
		})
	}
}

func TestSkipConsumesNothingFromABucketThatCannotCoverTheOverage(t *testing.T) {
	f := newFixture(0)
	key := tokens("api_key", "h1", 500, minute(600), day(100000))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}, Overage: limit.OverageSkip})
	require.True(t, out.Admitted())
	require.Equal(t, limit.OverageSkip, out.Hold.Overage)

	f.store.Settle(out.Hold, 700) // overage 200: the minute has 100, the day has plenty
	require.Equal(t, []float64{100, 99300}, levels(t, f.sd, key),
		"the minute keeps its 100 rather than draining partially; the day is charged in full")
}

func TestADebtIsChargedWholeAndRefillRepaysIt(t *testing.T) {
	f := newFixture(0)
	key := tokens("api_key", "h1", 500, minute(600), day(100000)) // the minute refills 10 a second
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
	require.True(t, out.Admitted())
	require.Equal(t, limit.OverageDebt, out.Hold.Overage, "debt is the zero value, the default")

	f.store.Settle(out.Hold, 1500) // overage 1000 on a minute level of 100
	require.Equal(t, []float64{-900, 98500}, levels(t, f.sd, key), "every period is charged the whole overage")

	probe := tokens("api_key", "h1", 100, minute(600), day(100000))
	out = admit(t, f.store, limit.Plan{Tokens: []limit.Op{probe}})
	require.False(t, out.Admitted())
	require.Equal(t, limit.PeriodMinute, out.Refusal.Budget)
	require.Equal(t, int64(100), out.Refusal.RetryAfterSec, "the wait repays the debt and then the request: (100+900)/10")
	require.False(t, out.Refusal.ExceedsCapacity)
	require.Equal(t, int64(0), out.Refusal.Level.Remaining, "a debt is shown as nothing left, never negative")
	require.Equal(t, f.clock.t/sec+150, out.Refusal.Level.ResetUnix, "whole again once the debt and the gap are refilled")

	f.clock.t += 99 * sec
	require.False(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{probe}}).Admitted(), "99 s is not enough")
	f.clock.t += sec
	require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{probe}}).Admitted(), "100 s is")
}

func TestAZeroHoldIsRefusedOnABucketAtOrBelowZero(t *testing.T) {
	cases := []struct {
		name     string
		used     int64 // settled on a 600 reservation before the zero hold
		admitted bool
		retry    int64
	}{
		{"tokens left admit a zero hold", 599, true, 0},
		{"an empty bucket refuses a zero hold", 600, false, 1},
		{"an indebted bucket refuses a zero hold until it is above zero", 1000, false, 41},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(0)
			key := tokens("api_key", "h1", 600, minute(600))
			out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
			require.True(t, out.Admitted())
			f.store.Settle(out.Hold, c.used)

			zeroHold := tokens("api_key", "h1", 0, minute(600))
			out = admit(t, f.store, limit.Plan{Tokens: []limit.Op{zeroHold}})
			require.Equal(t, c.admitted, out.Admitted())
			if !c.admitted {
				require.Equal(t, c.retry, out.Refusal.RetryAfterSec)
				require.False(t, out.Refusal.ExceedsCapacity, "waiting cures it")
			}
		})
	}
}

func TestAHoldSettlesByTheRuleItWasAdmittedUnder(t *testing.T) {
	for _, overage := range []limit.Overage{limit.OverageDebt, limit.OverageSkip} {
		f := newFixture(0)
		key := tokens("api_key", "h1", 500, minute(600))
		out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}, Overage: overage})
		require.True(t, out.Admitted())

		// A later plan under the other rule (a reload) changes nothing for
		// this hold: the rule travels on the hold, the store keeps none.
		other := limit.OverageSkip - overage
		later := tokens("api_key", "h2", 10, minute(600))
		require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{later}, Overage: other}).Admitted())
		f.store.Settle(out.Hold, 800)
		want := map[limit.Overage]float64{limit.OverageDebt: -200, limit.OverageSkip: 100}[overage]
		require.Equal(t, []float64{want}, levels(t, f.sd, key), "overage %d", overage)
	}
}

func TestReleaseGivesBackTheWholeHold(t *testing.T) {
	f := newFixture(0)
	global := tokens("global", "", 300, minute(1000), day(5000))
	key := tokens("api_key", "h1", 300, minute(600))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{global, key}})
	require.True(t, out.Admitted())

	f.store.Release(out.Hold)
	f.store.Flush() // a refund reaches shared data on the tick
	require.Equal(t, []float64{1000, 5000}, levels(t, f.sd, global))
	require.Equal(t, []float64{600}, levels(t, f.sd, key))
}

func TestConcurrencyUnitsAreReleasedOnSettleAndRelease(t *testing.T) {
	for _, end := range []string{"settle", "release"} {
		t.Run(end, func(t *testing.T) {
			f := newFixture(0)
			conc := inflight("api_key", "h1", 1)
			plan := limit.Plan{Requests: []limit.Op{conc}, Tokens: []limit.Op{tokens("global", "", 10, minute(100))}}
			first := admit(t, f.store, plan)
			require.True(t, first.Admitted())
			out := admit(t, f.store, plan)
			require.False(t, out.Admitted(), "one request in flight fills a concurrency of one")
			require.Equal(t, limit.PeriodConcurrent, out.Refusal.Budget)

			if end == "settle" {
				f.store.Settle(first.Hold, 10)
			} else {
				f.store.Release(first.Hold)
			}
			require.Equal(t, []float64{1}, levels(t, f.sd, conc))
			require.True(t, admit(t, f.store, plan).Admitted())
		})
	}
}

func TestSettleUsesTheRecordedParametersAfterAReload(t *testing.T) {
	f := newFixture(0)
	before := tokens("api_key", "h1", 800, minute(1000))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{before}})
	require.True(t, out.Admitted())

	// A reload lowers the budget: new requests use a new key and new numbers.
	after := before
	after.Key = "tb|t|api_key|v2|h1"
	after.Limits = []limit.Limit{minute(100)}
	after.Amount = 50
	require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{after}}).Admitted())

	f.store.Settle(out.Hold, 100)
	f.store.Flush() // a refund reaches shared data on the tick
	require.Equal(t, []float64{900}, levels(t, f.sd, before), "refunded up to the recorded capacity of 1000, not the live 100")
	require.Equal(t, []float64{50}, levels(t, f.sd, after), "the new bucket is untouched by the old hold")
}

func TestAHoldOfAnotherBackendIsNeverEndedHere(t *testing.T) {
	f := newFixture(0)
	key := tokens("api_key", "h1", 300, minute(600))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
	remote := out.Hold
	remote.Backend = limit.BackendRemote
	f.store.Release(remote)
	f.store.Settle(remote, 0)
	require.Equal(t, []float64{300}, levels(t, f.sd, key))
}

// Past max_buckets a new bucket takes a reusable slot; only when no slot it
// may use can take it does it fail open, and then the full maps are named.
func TestMaxBucketsFailsOpenAndNamesTheFamilyOnlyWhenNoSlotIsFree(t *testing.T) {
	f := newFixture(1)
	planFor := func(id string) limit.Plan {
		return limit.Plan{
			Requests: []limit.Op{requests("api_key", id, minute(10))},
			Tokens: []limit.Op{
				tokens("global", "", 100, minute(10000)),
				tokens("api_key", id, 100, minute(150), day(1000)),
			},
		}
	}
	out := admit(t, f.store, planFor("a"))
	require.True(t, out.Admitted())
	require.Empty(t, out.Skipped)

	out = admit(t, f.store, planFor("b"))
	require.True(t, out.Admitted())
	require.Empty(t, out.Skipped, "b's buckets went to the maps' reusable slots")
	require.Len(t, out.Hold.Entries, 2)
	require.Nil(t, levels(t, f.sd, planFor("b").Tokens[1]), "no bucket was made under b's own key past the ceiling")
	require.Equal(t, []float64{50, 900}, slotLevels(t, f.sd, "tb|o|t|api_key|v1|0", 2))

	out = admit(t, f.store, planFor("c"))
	require.True(t, out.Admitted(), "a bucket no slot can take fails open")
	require.ElementsMatch(t, []string{"requests", "token_budget", "token_budget_day"}, out.Skipped)
	require.Len(t, out.Hold.Entries, 1, "only the global bucket is held")
	require.Equal(t, limit.DimGlobal, out.Hold.Entries[0].Dimension)
	require.Equal(t, []float64{9700}, levels(t, f.sd, planFor("c").Tokens[0]))

	out = admit(t, f.store, planFor("a"))
	require.False(t, out.Admitted(), "buckets that exist are still enforced at the ceiling")
	require.Empty(t, out.Skipped)

	// A reload (new version in the key) starts fresh maps.
	reloaded := planFor("c")
	reloaded.Tokens[1].Key = "tb|t|api_key|v2|c"
	out = admit(t, f.store, reloaded)
	require.True(t, out.Admitted())
	require.Equal(t, []string{"requests"}, out.Skipped)
	require.Len(t, out.Hold.Entries, 2)
}
