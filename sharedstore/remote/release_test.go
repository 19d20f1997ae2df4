package remote

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// count is how many calls went to path.
func (f *fakeCaller) count(path string) int {
	n := 0
	for _, p := range f.paths {
		if p == path {
			n++
		}
	}
	return n
}

// holdIDs are the hold ids the admit calls carried, in order.
func (f *fakeCaller) holdIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	for i, p := range f.paths {
		if p != wire.PathAdmit {
			continue
		}
		var req wire.AdmitRequest
		require.NoError(t, json.Unmarshal(f.bodies[i], &req))
		ids = append(ids, req.HoldID)
	}
	return ids
}

// The filter gives up on an admission whose answer comes after timeout_ms,
// but Redis committed it: the client releases the hold id it chose, retried
// from Tick like any release, and the bucket is whole again.
func TestAdmissionTimeoutQueuesAReleaseSentOnTick(t *testing.T) {
	r := newRig(t, token)
	r.fc.lose = []bool{true}
	r.fc.failErr = []error{nil, errors.New("store still slow")} // the release's first attempt fails too
	o := r.admit(t, plan("t", 400, 1000))
	require.Error(t, o.Err, "the filter treats the store as unavailable")
	require.InDelta(t, 600, r.level(t, "tk:t", "minute", 1000), 0.5, "Redis committed the admission")
	require.Equal(t, 1, r.fc.count(wire.PathRelease), "a release of the hold id is sent at once")
	r.fc.deliver()
	require.Equal(t, 1, r.store.Pending(), "its failure leaves it for Tick")
	r.store.Tick()
	r.fc.deliver()
	require.Equal(t, 2, r.fc.count(wire.PathRelease))
	r.store.Tick()
	require.Equal(t, 0, r.store.Pending())
	require.InDelta(t, 1000, r.level(t, "tk:t", "minute", 1000), 0.5, "the tokens are back")
	require.InDelta(t, 5, r.level(t, "cc:t", "concurrent", 5), 0.01, "the concurrency unit is back")
}

// The release may reach the service before the admission it cancels: the
// admission then commits nothing, and its late answer (aborted) is ignored.
func TestReleaseThatOvertakesItsAdmissionLeavesNothingTaken(t *testing.T) {
	r := newRig(t, token)
	r.fc.overtake = []bool{true}
	answers := 0
	r.store.Admit(plan("o", 400, 1000), func(o limit.Outcome) {
		answers++
		require.Error(t, o.Err)
	})
	r.fc.deliver() // the admission times out; its request is still on the way
	r.fc.deliver() // the release lands first
	require.Equal(t, 0, r.store.Pending())
	require.Len(t, r.fc.late, 1)
	status, body := r.fc.late[0]()
	require.Equal(t, 200, status, string(body))
	resp, err := wire.DecodeAdmitResponse(body)
	require.NoError(t, err)
	require.True(t, resp.Aborted)
	require.Equal(t, 1, answers)
	require.InDelta(t, 1000, r.level(t, "tk:o", "minute", 1000), 0.5)
	require.InDelta(t, 5, r.level(t, "cc:o", "concurrent", 5), 0.01)
}

func TestOnlyAnswersThatMayHideAHoldAreFollowedByARelease(t *testing.T) {
	tests := []struct {
		name        string
		setup       func(r *rig)
		token       string
		amount      int64
		wantRelease bool
	}{
		{"transport error", func(r *rig) { r.fc.failErr = []error{errors.New("upstream reset")} }, token, 1, true},
		{"lost answer", func(r *rig) { r.fc.lose = []bool{true} }, token, 1, true},
		{"503", func(r *rig) { r.fc.failSt = []int{503} }, token, 1, true},
		{"429", func(r *rig) { r.fc.failSt = []int{429} }, token, 1, true},
		{"2xx that does not decode", func(r *rig) { r.fc.failSt = []int{200} }, token, 1, true},
		{"401 wrong token", func(*rig) {}, "not-the-token", 1, false},
		{"400 bad request", func(r *rig) { r.fc.failSt = []int{400} }, token, 1, false},
		{"refusal", func(*rig) {}, token, 3000, false},
		{"admitted", func(*rig) {}, token, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.token)
			tt.setup(r)
			r.admit(t, plan("w", tt.amount, 1000))
			want := 0
			if tt.wantRelease {
				want = 1
			}
			require.Equal(t, want, r.fc.count(wire.PathRelease))
			if tt.wantRelease {
				require.Contains(t, string(r.fc.bodies[1]), r.fc.holdIDs(t)[0], "the release names the admission's hold id")
			}
		})
	}
}

func TestAdmissionCarriesTheHoldIDItWillRelease(t *testing.T) {
	r := newRig(t, token)
	o := r.admit(t, plan("i", 10, 1000))
	require.True(t, o.Admitted())
	ids := r.fc.holdIDs(t)
	require.Len(t, ids, 1)
	require.True(t, wire.ValidHoldID(ids[0]))
	require.Equal(t, ids[0], o.Hold.ID, "the service admitted under the client's id")
}

func TestPlanWithNothingToHoldSendsNoHoldIDAndNoRelease(t *testing.T) {
	r := newRig(t, token)
	r.fc.lose = []bool{true}
	p := limit.Plan{Requests: []limit.Op{{Key: "rq:n", Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Amount: 1,
		Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: 10, RefillPerSec: 1}}}}}
	o := r.admit(t, p)
	require.Error(t, o.Err)
	require.Equal(t, []string{""}, r.fc.holdIDs(t))
	require.Zero(t, r.fc.count(wire.PathRelease), "request units are never given back")
}

func TestConfiguredHoldIDGeneratorIsUsed(t *testing.T) {
	r := newRig(t, token)
	r.store = New(r.fc, Config{Token: token, NewHoldID: func() string { return "00000000000000000000000000c0ffee" }}, func() int64 { return r.clock })
	o := r.admit(t, plan("g", 10, 1000))
	require.True(t, o.Admitted())
	require.Equal(t, "00000000000000000000000000c0ffee", o.Hold.ID)
}

func TestRandomHoldIDsAreValidAndDistinct(t *testing.T) {
	seen := make(map[string]struct{}, 10000)
	for range 10000 {
		id := randomHoldID()
		require.True(t, wire.ValidHoldID(id), id)
		_, dup := seen[id]
		require.False(t, dup, id)
		seen[id] = struct{}{}
	}
}

func TestCallRefusedByTheHostIsNotReleased(t *testing.T) {
	r := newRig(t, token)
	r.fc.refuse = errors.New("no such cluster")
	var got *limit.Outcome
	r.store.Admit(plan("x", 1, 10), func(o limit.Outcome) { got = &o })
	require.NotNil(t, got)
	require.Error(t, got.Err)
	require.Zero(t, r.store.Pending(), "a call that never left committed nothing")
}
