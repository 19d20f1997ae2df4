package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi/abitest"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// fleetStore stands for any store that may answer after Admit returns.
type fleetStore struct{ sharedstore.Store }

func TestADeletedStreamIsReusedWithNothingOfItsRequestLeft(t *testing.T) {
	r := NewRoot(1, abitest.New(nil))
	require.True(t, r.OnConfigure([]byte(benchTwoDimensions)))
	s := r.NewHTTPContext(2).(*Stream)
	s.route, s.store, s.decided, s.held = true, r.store, true, true
	s.body, s.levels = []byte("answer"), []sharedstore.OpLevel{{Dimension: limit.DimAPIKey}}
	s.who.APIKeyHash = "h"
	s.OnDelete()

	next := r.NewHTTPContext(3).(*Stream)
	require.Same(t, s, next, "a stream of the shared-data store is reused")
	require.Equal(t, uint32(3), next.id)
	require.Same(t, r, next.root)
	require.NotNil(t, next.onAdmitted)
	got := *next
	got.onAdmitted = nil // funcs never compare equal
	require.Equal(t, Stream{root: r, id: 3}, got, "nothing of the earlier request is left")
	require.Equal(t, map[uint32]*Stream{3: next}, r.streams)
}

func TestAStreamAFleetStoreMayStillAnswerIsNeverReused(t *testing.T) {
	r := NewRoot(1, abitest.New(nil))
	require.True(t, r.OnConfigure([]byte(benchTwoDimensions)))
	s := r.NewHTTPContext(2).(*Stream)
	s.store = fleetStore{r.store}
	s.OnDelete()
	require.NotSame(t, s, r.NewHTTPContext(3).(*Stream))
	require.True(t, s.done, "a late answer finds the stream done and releases what it reserved")
}

func TestTheBoundAdmissionCallbackReachesTheReusedStream(t *testing.T) {
	r := NewRoot(1, abitest.New(nil))
	require.True(t, r.OnConfigure([]byte(benchTwoDimensions)))
	s := r.NewHTTPContext(2).(*Stream)
	s.OnDelete()
	next := r.NewHTTPContext(3).(*Stream)
	next.admitting = true
	next.onAdmitted(sharedstore.Outcome{Result: sharedstore.ResultAdmitted})
	require.True(t, next.decided)
}
