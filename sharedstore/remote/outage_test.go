package remote

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// withRecord gives a hold the spend part that makes its settlement carry
// an inference record.
func withRecord(t *testing.T, h limit.Hold, now int64) limit.Hold {
	t.Helper()
	day, month, ok := calendar.Both(now)
	require.True(t, ok)
	h.Spend.Policy = spend.Policy{Team: "eng", APIKey: "k"}
	h.Spend.Policy.Limits[spend.KeyDay] = spend.Limit{Amount: 1, Set: true}
	h.Spend.Day, h.Spend.Month, h.Spend.Start, h.Spend.Model = day, month, now, "m"
	h.SpendCost = 5
	return h
}

const tickNs = 500_000_000 // the filter's tick

// A settlement whose service is unreachable for nine minutes waits it out
// (the default window is ten minutes), costs at most one probe a tick
// while it waits, and lands once the service is back: nothing is dropped.
func TestASettlementWaitsOutANineMinuteOutageOfTheServiceAndLands(t *testing.T) {
	r := newRig(t, token)
	r.store = New(r.fc, Config{Token: token, Authority: "sharedstore"}, func() int64 { return r.clock })
	o := r.admit(t, plan("outage", 10, 1000))
	require.True(t, o.Admitted())

	r.fc.refuse = errors.New("no healthy upstream")
	holds := make([]limit.Hold, 20)
	for i := range holds {
		holds[i] = withRecord(t, limit.Hold{Backend: limit.BackendRemote, ID: randomHoldID()}, r.clock)
		r.store.Settle(holds[i], 1)
	}
	holds[0] = withRecord(t, o.Hold, r.clock)
	r.store.Settle(holds[0], 4)
	calls := r.fc.calls
	ticks := 0
	for elapsed := int64(0); elapsed < 9*60e9; elapsed += tickNs {
		r.clock += tickNs
		r.store.Tick()
		ticks++
	}
	require.Equal(t, 21, r.store.Pending(), "nothing dropped within the window")
	require.Zero(t, r.store.Dropped())
	require.Zero(t, r.fc.calls-calls, "refused calls never left")

	r.fc.refuse = nil
	for i := 0; i < 20 && r.store.Pending() > 0; i++ {
		r.clock += tickNs
		r.store.Tick()
		r.fc.deliver()
	}
	require.Zero(t, r.store.Pending(), "every settlement delivered after the outage")
	require.Zero(t, r.store.Dropped())
	require.Zero(t, r.store.DroppedRecords())
	require.InDelta(t, 996, r.level(t, "tk:outage", "minute", 1000), 0.5, "the admitted hold settled at its usage: 4 of the 10 reserved")
}

// While the service answers with failures, a tick retries one call (a
// probe), not every due one; once an answer succeeds, up to
// retriesPerTick a tick.
func TestWhileTheServiceFailsATickSendsOneProbe(t *testing.T) {
	r := newRig(t, token)
	r.store = New(r.fc, Config{Token: token, Authority: "sharedstore"}, func() int64 { return r.clock })
	fail := make([]int, 600)
	for i := range fail {
		fail[i] = 503
	}
	r.fc.failSt = fail
	for i := 0; i < 300; i++ {
		r.store.Release(limit.Hold{Backend: limit.BackendRemote, ID: randomHoldID()})
	}
	r.fc.deliver()
	for i := 0; i < 10; i++ {
		r.clock += backoffMaxNs + 1 // every call is due
		before := r.fc.calls
		r.store.Tick()
		require.Equal(t, 1, r.fc.calls-before, "tick %d: one probe", i)
		r.fc.deliver()
	}
	r.fc.failSt = nil
	r.clock += backoffMaxNs + 1
	r.store.Tick()
	r.fc.deliver() // the probe succeeds
	r.clock += backoffMaxNs + 1
	before := r.fc.calls
	r.store.Tick()
	require.Equal(t, retriesPerTick, r.fc.calls-before, "the service answers again: a full tick's worth")
}

// A VM holds at most MaxWaiting calls across its stores. Past it the
// oldest call without an inference record goes first, then the oldest
// record; each drop is counted, and a record only when it carried one.
func TestPastTenThousandWaitingCallsTheOldestIsDroppedAndCounted(t *testing.T) {
	r := newRig(t, token)
	q := &Queue{}
	a := New(r.fc, Config{Token: token, Authority: "sharedstore", Queue: q}, func() int64 { return r.clock })
	b := New(r.fc, Config{Token: token, Authority: "sharedstore", Queue: q}, func() int64 { return r.clock })
	r.fc.refuse = errors.New("no healthy upstream")
	a.Release(limit.Hold{Backend: limit.BackendRemote, ID: "release-0000000000000000000000000"})
	for i := 1; i < MaxWaiting; i++ {
		a.Settle(withRecord(t, limit.Hold{Backend: limit.BackendRemote, ID: "hold-" + strconv.Itoa(i)}, r.clock), 1)
	}
	require.Equal(t, MaxWaiting, q.Waiting())
	require.Zero(t, a.Dropped())

	a.Settle(withRecord(t, limit.Hold{Backend: limit.BackendRemote, ID: "one-more"}, r.clock), 1)
	require.Equal(t, MaxWaiting, q.Waiting())
	require.Equal(t, uint64(1), a.Dropped(), "the release made room")
	require.Zero(t, a.DroppedRecords())

	a.Settle(withRecord(t, limit.Hold{Backend: limit.BackendRemote, ID: "and-another"}, r.clock), 1)
	require.Equal(t, uint64(2), a.Dropped())
	require.Equal(t, uint64(1), a.DroppedRecords(), "then the oldest record, counted")

	b.Settle(withRecord(t, limit.Hold{Backend: limit.BackendRemote, ID: "other-store"}, r.clock), 1)
	require.Equal(t, uint64(1), b.DroppedRecords(), "the bound is the VM's: a store with nothing waiting drops its own call")
	require.Equal(t, MaxWaiting, q.Waiting())

	r.clock += DefaultRetryForNs + 1
	a.Tick()
	require.Zero(t, q.Waiting(), "past the window every call is dropped")
	require.Equal(t, uint64(MaxWaiting+1), a.DroppedRecords())
}
