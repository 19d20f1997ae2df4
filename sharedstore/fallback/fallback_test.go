package fallback

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// fakeStore answers every admission with a fixed outcome and records ends.
type fakeStore struct {
	backend  limit.Backend
	err      error
	admits   int
	settled  []int64
	released int
	plans    []limit.Plan
}

func (f *fakeStore) Admit(p limit.Plan, done func(limit.Outcome)) {
	f.admits++
	f.plans = append(f.plans, p)
	if f.err != nil {
		done(limit.Outcome{Err: f.err})
		return
	}
	done(limit.Outcome{Result: limit.ResultAdmitted, Hold: limit.Hold{Backend: f.backend}})
}
func (f *fakeStore) Settle(_ limit.Hold, a int64) { f.settled = append(f.settled, a) }
func (f *fakeStore) Release(limit.Hold)           { f.released++ }

var plan = limit.Plan{
	Requests: []limit.Op{{Dimension: limit.DimAPIKey, Kind: limit.KindRequests}, {Dimension: limit.DimGlobal, Kind: limit.KindConcurrency}},
	Tokens:   []limit.Op{{Dimension: limit.DimAPIKey, Kind: limit.KindTokens}, {Dimension: limit.DimModel, Kind: limit.KindTokens}},
}

func TestRemoteFailureFollowsFallbackToMemory(t *testing.T) {
	tests := []struct {
		name        string
		fallback    bool
		wantErr     bool
		wantBackend limit.Backend
		wantAction  string
	}{
		{"fallback admits on the local buckets", true, false, limit.BackendLocal, ActionFallback},
		{"fail closed keeps the error for a 503", false, true, 0, ActionReject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remote := &fakeStore{backend: limit.BackendRemote, err: errors.New("timeout")}
			local := &fakeStore{backend: limit.BackendLocal}
			var events [][2]string
			s := New(remote, local, tt.fallback, func(d limit.Dimension, a string) { events = append(events, [2]string{d.String(), a}) }, nil)
			var got limit.Outcome
			s.Admit(plan, func(o limit.Outcome) { got = o })
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
	remote := &fakeStore{backend: limit.BackendRemote}
	local := &fakeStore{backend: limit.BackendLocal}
	called := false
	s := New(remote, local, true, func(limit.Dimension, string) { called = true }, nil)
	var got limit.Outcome
	s.Admit(plan, func(o limit.Outcome) { got = o })
	require.True(t, got.Admitted())
	require.Equal(t, limit.BackendRemote, got.Hold.Backend)
	require.False(t, called)
	require.Equal(t, 0, local.admits)
}

func TestHoldsEndOnTheStoreThatMadeThem(t *testing.T) {
	remote := &fakeStore{}
	local := &fakeStore{}
	s := New(remote, local, true, nil, nil)
	s.Settle(limit.Hold{Backend: limit.BackendLocal}, 5)
	s.Release(limit.Hold{Backend: limit.BackendLocal})
	s.Settle(limit.Hold{Backend: limit.BackendRemote}, 7)
	s.Release(limit.Hold{Backend: limit.BackendRemote})
	s.Release(limit.Hold{})
	require.Equal(t, []int64{5}, local.settled)
	require.Equal(t, []int64{7}, remote.settled)
	require.Equal(t, 1, local.released)
	require.Equal(t, 1, remote.released)
}

func TestAFallbackAdmitsTheLocalPlanOnlyWhenTheRemoteFails(t *testing.T) {
	divided := limit.Plan{Tokens: []limit.Op{{Dimension: limit.DimAPIKey, Kind: limit.KindTokens, Key: "divided"}}}
	for _, remoteErr := range []error{nil, errors.New("down")} {
		remote := &fakeStore{backend: limit.BackendRemote, err: remoteErr}
		local := &fakeStore{backend: limit.BackendLocal}
		built := 0
		s := New(remote, local, true, nil, func(p limit.Plan) limit.Plan {
			built++
			require.Equal(t, plan, p, "built from the fleet plan")
			return divided
		})
		s.Admit(plan, func(limit.Outcome) {})
		require.Equal(t, []limit.Plan{plan}, remote.plans, "the fleet store gets the undivided plan")
		if remoteErr == nil {
			require.Zero(t, built, "the normal path never builds the local plan")
			require.Empty(t, local.plans)
		} else {
			require.Equal(t, 1, built)
			require.Equal(t, []limit.Plan{divided}, local.plans, "the local buckets get the divided plan")
		}
	}
}

func TestFailClosedNeverBuildsTheLocalPlan(t *testing.T) {
	remote := &fakeStore{backend: limit.BackendRemote, err: errors.New("down")}
	s := New(remote, &fakeStore{}, false, nil, func(limit.Plan) limit.Plan {
		t.Fatal("built a plan nobody admits")
		return limit.Plan{}
	})
	var got limit.Outcome
	s.Admit(plan, func(o limit.Outcome) { got = o })
	require.Error(t, got.Err)
}
