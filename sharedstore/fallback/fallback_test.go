package fallback

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// fakeStore answers every admission with a fixed outcome and records ends.
type fakeStore struct {
	backend  sharedstore.Backend
	err      error
	admits   int
	settled  []int64
	released int
	plans    []sharedstore.Plan
}

func (f *fakeStore) Admit(p sharedstore.Plan, done func(sharedstore.Outcome)) {
	f.admits++
	f.plans = append(f.plans, p)
	if f.err != nil {
		done(sharedstore.Outcome{Err: f.err})
		return
	}
	done(sharedstore.Outcome{Result: sharedstore.ResultAdmitted, Hold: sharedstore.Hold{Backend: f.backend}})
}
func (f *fakeStore) Settle(_ sharedstore.Hold, a int64) { f.settled = append(f.settled, a) }
func (f *fakeStore) Release(sharedstore.Hold)           { f.released++ }

var plan = sharedstore.Plan{
	Requests: []sharedstore.Op{{Dimension: limit.DimAPIKey, Kind: sharedstore.KindRequests}, {Dimension: limit.DimGlobal, Kind: sharedstore.KindConcurrency}},
	Tokens:   []sharedstore.Op{{Dimension: limit.DimAPIKey, Kind: sharedstore.KindTokens}, {Dimension: limit.DimModel, Kind: sharedstore.KindTokens}},
}

func TestRemoteFailureFollowsFallbackToMemory(t *testing.T) {
	tests := []struct {
		name        string
		fallback    bool
		wantErr     bool
		wantBackend sharedstore.Backend
		wantAction  string
	}{
		{"fallback admits on the local buckets", true, false, sharedstore.BackendLocal, ActionFallback},
		{"fail closed keeps the error for a 503", false, true, 0, ActionReject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remote := &fakeStore{backend: sharedstore.BackendRemote, err: errors.New("timeout")}
			local := &fakeStore{backend: sharedstore.BackendLocal}
			var events [][2]string
			s := New(remote, local, tt.fallback, func(d sharedstore.Dimension, a string) { events = append(events, [2]string{d.String(), a}) }, nil)
			var got sharedstore.Outcome
			s.Admit(plan, func(o sharedstore.Outcome) { got = o })
			require.Equal(t, tt.wantErr, got.Err != nil)
			require.Equal(t, tt.wantBackend, got.Hold.Backend)
			require.Equal(t, [][2]string{{"api_key", tt.wantAction}, {"global", tt.wantAction}, {"model", tt.wantAction}}, events,
				"once per distinct dimension")
			if tt.fallback {
				require.Equal(t, 1, local.admits)
			} else {
				require.Equal(t, 0, local.admits)
			}
		})
	}
}

func TestRemoteAnswerIsUsedAsIsAndReportsNothing(t *testing.T) {
	remote := &fakeStore{backend: sharedstore.BackendRemote}
	local := &fakeStore{backend: sharedstore.BackendLocal}
	called := false
	s := New(remote, local, true, func(sharedstore.Dimension, string) { called = true }, nil)
	var got sharedstore.Outcome
	s.Admit(plan, func(o sharedstore.Outcome) { got = o })
	require.True(t, got.Admitted())
	require.Equal(t, sharedstore.BackendRemote, got.Hold.Backend)
	require.False(t, called)
	require.Equal(t, 0, local.admits)
}

func TestHoldsEndOnTheStoreThatMadeThem(t *testing.T) {
	remote := &fakeStore{}
	local := &fakeStore{}
	s := New(remote, local, true, nil, nil)
	s.Settle(sharedstore.Hold{Backend: sharedstore.BackendLocal}, 5)
	s.Release(sharedstore.Hold{Backend: sharedstore.BackendLocal})
	s.Settle(sharedstore.Hold{Backend: sharedstore.BackendRemote}, 7)
	s.Release(sharedstore.Hold{Backend: sharedstore.BackendRemote})
	s.Release(sharedstore.Hold{})
	require.Equal(t, []int64{5}, local.settled)
	require.Equal(t, []int64{7}, remote.settled)
	require.Equal(t, 1, local.released)
	require.Equal(t, 1, remote.released)
}

func TestAFallbackAdmitsTheLocalPlanOnlyWhenTheRemoteFails(t *testing.T) {
	divided := sharedstore.Plan{Tokens: []sharedstore.Op{{Dimension: limit.DimAPIKey, Kind: sharedstore.KindTokens, Key: "divided"}}}
	for _, remoteErr := range []error{nil, errors.New("down")} {
		remote := &fakeStore{backend: sharedstore.BackendRemote, err: remoteErr}
		local := &fakeStore{backend: sharedstore.BackendLocal}
		built := 0
		s := New(remote, local, true, nil, func(p sharedstore.Plan) sharedstore.Plan {
			built++
			require.Equal(t, plan, p, "built from the fleet plan")
			return divided
		})
		s.Admit(plan, func(sharedstore.Outcome) {})
		require.Equal(t, []sharedstore.Plan{plan}, remote.plans, "the fleet store gets the undivided plan")
		if remoteErr == nil {
			require.Zero(t, built, "the normal path never builds the local plan")
			require.Empty(t, local.plans)
		} else {
			require.Equal(t, 1, built)
			require.Equal(t, []sharedstore.Plan{divided}, local.plans, "the local buckets get the divided plan")
		}
	}
}

func TestFailClosedNeverBuildsTheLocalPlan(t *testing.T) {
	remote := &fakeStore{backend: sharedstore.BackendRemote, err: errors.New("down")}
	s := New(remote, &fakeStore{}, false, nil, func(sharedstore.Plan) sharedstore.Plan {
		t.Fatal("built a plan nobody admits")
		return sharedstore.Plan{}
	})
	var got sharedstore.Outcome
	s.Admit(plan, func(o sharedstore.Outcome) { got = o })
	require.Error(t, got.Err)
}
