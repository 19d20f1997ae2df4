package remote

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

func TestASettlementRetriedPastAFewFailuresBacksOffAndIsCountedWhenDropped(t *testing.T) {
	r := newRig(t, token)
	o := r.admit(t, plan("bo", 10, 1000))
	require.True(t, o.Admitted())
	h := o.Hold
	day, month, ok := calendar.Both(r.clock)
	require.True(t, ok)
	h.Spend.Policy = spend.Policy{Team: "eng", APIKey: "k"}
	h.Spend.Policy.Limits[spend.KeyDay] = spend.Limit{Amount: 1, Set: true}
	h.Spend.Day, h.Spend.Month, h.Spend.Start, h.Spend.Model = day, month, r.clock, "m"
	h.SpendCost = 5

	r.fc.failSt = []int{503, 503, 503, 503, 503, 503, 503, 503, 503, 503}
	r.store.Settle(h, 10)
	r.fc.deliver()
	for i := 0; i < 3; i++ { // the first retries follow on every tick
		r.clock += 1e6
		r.store.Tick()
		r.fc.deliver()
	}
	require.Equal(t, 4, r.fc.calls-1, "one admission, then four settlement attempts")
	calls := r.fc.calls
	r.clock += 100e6
	r.store.Tick()
	require.Equal(t, calls, r.fc.calls, "the fourth failure waits before the next attempt")
	r.clock += backoffBaseNs
	r.store.Tick()
	r.fc.deliver()
	require.Equal(t, calls+1, r.fc.calls)

	r.clock += 11e9 // past the rig's 10 s window
	r.store.Tick()
	require.Equal(t, 0, r.store.Pending())
	require.Equal(t, uint64(1), r.store.Dropped())
	require.Equal(t, uint64(1), r.store.DroppedRecords(), "it carried an inference record")
}
