package local_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// remember stores a fleet verdict that left left of slot (admitted: its
// own reservation, sp.Reserve, is taken off).
func remember(f *fixture, sp limit.Spend, slot spend.Slot, left money.Amount, admitted bool) {
	o := limit.Outcome{Result: limit.ResultSpendRefused}
	if admitted {
		o.Result = limit.ResultAdmitted
	}
	if slot == spend.NumSlots {
		o.SpendLeft.Balance = spend.Limit{Amount: left, Set: true}
	} else {
		o.SpendLeft.Left[slot] = spend.Limit{Amount: left, Set: true}
	}
	f.store.RememberSpend(&sp, &o)
}

// fallbackRun admits n fallback plans of sp, settling each at cost, and
// says how many were admitted.
func fallbackRun(t *testing.T, f *fixture, sp limit.Spend, n int, cost money.Amount) int {
	sp.Recall = true
	admitted := 0
	for range n {
		out := admit(t, f.store, limit.Plan{Spend: sp})
		require.NoError(t, out.Err)
		if !out.Admitted() {
			require.NotNil(t, out.SpendRefusal)
			continue
		}
		admitted++
		h := out.Hold
		h.SpendCost = cost
		f.store.Settle(h, 0)
	}
	return admitted
}

// In a fallback the last verdict decides: what was exhausted stays
// refused, what remained is reserved against (shared by every fallback
// admission of this Envoy), and a slot without a verdict falls to the
// local counters.
func TestAFallbackAdmitsAgainstWhatTheLastVerdictLeft(t *testing.T) {
	cases := []struct {
		name     string
		limits   map[spend.Slot]money.Amount // the filter's own
		slot     spend.Slot                  // the verdict's
		left     money.Amount
		admitted bool // the verdict's own request was admitted
		want     int
	}{
		{"a limit only the ledger knows holds what was left", nil, spend.KeyDay, 5 * usd / 100, false, 5},
		{"the verdict's own request is taken off", nil, spend.KeyDay, 5 * usd / 100, true, 4},
		{"an exhausted key stays refused", map[spend.Slot]money.Amount{spend.KeyDay: usd}, spend.KeyDay, 0, false, 0},
		{"an exhausted balance refuses", nil, spend.NumSlots, 0, false, 0},
		{"a balance holds what was left", nil, spend.NumSlots, 3 * usd / 100, false, 3},
		{"a verdict of another slot leaves this one to the counters",
			map[spend.Slot]money.Amount{spend.KeyMonth: 2 * usd / 100}, spend.UserDay, usd, false, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(0)
			f.clock.t = sep30Last * sec
			sp := reserving(t, c.limits, usd/100)
			sp.Fleet = true
			remember(f, sp, c.slot, c.left, c.admitted)
			require.Equal(t, c.want, fallbackRun(t, f, sp, 10, usd/100))
		})
	}
}

// A new verdict replaces what the fallback held: the fleet counts those
// calls once their records arrive.
func TestANewVerdictReplacesWhatTheFallbackHeld(t *testing.T) {
	f := newFixture(0)
	f.clock.t = sep30Last * sec
	sp := reserving(t, nil, usd/100)
	sp.Fleet = true
	remember(f, sp, spend.KeyDay, 2*usd/100, false)
	require.Equal(t, 2, fallbackRun(t, f, sp, 5, usd/100))
	remember(f, sp, spend.KeyDay, 3*usd/100, false)
	require.Equal(t, 3, fallbackRun(t, f, sp, 5, usd/100))
}

// A verdict of yesterday says nothing about today.
func TestAVerdictOfAnotherPeriodIsIgnored(t *testing.T) {
	f := newFixture(0)
	f.clock.t = sep30Last * sec
	old := reserving(t, nil, usd/100)
	old.Fleet = true
	remember(f, old, spend.KeyDay, 0, false)
	today := spendAt(t, oct1First, nil)
	today.Reserve, today.Fleet = usd/100, true
	require.Equal(t, 3, fallbackRun(t, f, today, 3, usd/100), "no verdict for the day: unchecked, as before")
}
