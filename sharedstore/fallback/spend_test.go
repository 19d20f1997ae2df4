package fallback

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

type keeper struct{ remembered []limit.Spend }

func (k *keeper) RememberSpend(sp *limit.Spend, _ *limit.Outcome) {
	k.remembered = append(k.remembered, *sp)
}

type recorder struct{ holds []limit.Hold }

func (r *recorder) Record(h limit.Hold) { r.holds = append(r.holds, h) }

var spendPlan = limit.Plan{Spend: limit.Spend{Fleet: true, Policy: spend.Policy{APIKey: "k"}}}

// Every verdict the fleet store gives is kept; a fallback plan asks the
// local store to admit against it (Spend.Recall); a local hold settled
// with a spend part has its record delivered through the fleet store,
// while a release (nothing spent) records nothing.
func TestSpendVerdictsAreKeptAndFallbackRecordsDelivered(t *testing.T) {
	k, r := &keeper{}, &recorder{}
	remote := &fakeStore{backend: limit.BackendRemote}
	local := &fakeStore{backend: limit.BackendLocal}
	s := New(remote, local, true, nil, nil, Remember(k), Records(r))

	s.Admit(spendPlan, func(limit.Outcome) {})
	require.Len(t, k.remembered, 1, "the fleet's verdict is kept")
	require.Empty(t, local.plans)

	remote.err = errors.New("down")
	var got limit.Outcome
	s.Admit(spendPlan, func(o limit.Outcome) { got = o })
	require.Len(t, local.plans, 1)
	require.True(t, local.plans[0].Spend.Recall, "the fallback admits against the kept verdicts")
	require.Len(t, k.remembered, 1, "a failed answer keeps nothing")

	h := got.Hold
	h.Spend = spendPlan.Spend
	s.Settle(h, 10)
	require.Len(t, r.holds, 1, "the fallback admission's record is queued for the ledger")
	s.Release(h)
	require.Len(t, r.holds, 1, "a release records nothing")

	noSpend := limit.Hold{Backend: limit.BackendLocal}
	s.Settle(noSpend, 10)
	require.Len(t, r.holds, 1, "no spend part, no record")
}

// Without fallback_to_memory nothing is kept: no outage admits on it.
func TestWithoutFallbackNoVerdictIsKept(t *testing.T) {
	k := &keeper{}
	s := New(&fakeStore{backend: limit.BackendRemote}, &fakeStore{}, false, nil, nil, Remember(k))
	s.Admit(spendPlan, func(limit.Outcome) {})
	require.Empty(t, k.remembered)
}
