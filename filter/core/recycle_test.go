package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/exchange"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// fleetStore stands for any store that may answer after Admit returns;
// this one never answers by itself.
type fleetStore struct{ sharedstore.Store }

func (fleetStore) Admit(limit.Plan, func(limit.Outcome)) {}

func TestADeletedStreamIsReusedWithNothingOfItsRequestLeft(t *testing.T) {
	t.Parallel()
	h := newGuestHost()
	r := NewRoot(1, h)
	require.True(t, r.OnConfigure([]byte(benchTwoDimensions)))
	rig := &benchRig{h: h, root: r, next: 2}
	body := benchBody(1<<10, false)
	rig.setHeaders(body)
	s := r.NewHttpContext(2).(*Stream)
	h.body = body
	require.Equal(t, abi.ActionContinue, s.OnHttpRequestHeaders(len(h.req), false))
	require.Equal(t, abi.ActionContinue, s.OnHttpRequestBody(len(body), true))
	require.NotEmpty(t, s.x.Identity().APIKeyHash, "the request was identified and admitted")
	s.OnHttpStreamDone()
	s.OnDone()
	s.OnDelete()

	next := r.NewHttpContext(3).(*Stream)
	require.Same(t, s, next, "a stream of the shared-data store is reused")
	require.Equal(t, uint32(3), next.id)
	require.Same(t, r, next.root)
	require.NotNil(t, next.onAdmitted)
	require.Nil(t, next.store)
	require.False(t, next.admitting)
	require.Equal(t, exchange.PhaseStart, next.x.Phase(), "nothing of the earlier request is left")
	require.Equal(t, budget.Identity{}, next.x.Identity())
}

func TestAStreamAFleetStoreMayStillAnswerIsNeverReused(t *testing.T) {
	t.Parallel()
	r := NewRoot(1, newGuestHost())
	require.True(t, r.OnConfigure([]byte(benchTwoDimensions)))
	s := r.NewHttpContext(2).(*Stream)
	s.store = fleetStore{r.store}
	s.OnDelete()
	require.NotSame(t, s, r.NewHttpContext(3).(*Stream))
	require.Equal(t, exchange.PhaseDone, s.x.Phase(), "a late answer finds the stream done and releases what it reserved")
}

func TestTheBoundAdmissionCallbackReachesTheReusedStream(t *testing.T) {
	t.Parallel()
	h := newGuestHost()
	r := NewRoot(1, h)
	require.True(t, r.OnConfigure([]byte(benchTwoDimensions)))
	s := r.NewHttpContext(2).(*Stream)
	s.OnDelete()
	next := r.NewHttpContext(3).(*Stream)
	body := benchBody(1<<10, false)
	(&benchRig{h: h, root: r}).setHeaders(body)
	h.body = body
	next.OnHttpRequestHeaders(len(h.req), false)
	next.store = fleetStore{r.store} // answers only when told
	next.OnHttpRequestBody(len(body), true)
	require.Equal(t, exchange.PhaseAdmitting, next.x.Phase())
	next.onAdmitted(limit.Outcome{Result: limit.ResultAdmitted})
	require.Equal(t, exchange.PhaseForwarded, next.x.Phase())
}
