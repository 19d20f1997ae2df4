package wasmtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A settlement's refund waits in its worker VM: that worker's next request
// on the bucket writes it with its own admission, and the tick writes it
// for the others (DECISIONS.md, "Refunds reach shared data with the next
// admission or the tick").
func TestARefundIsSeenAtOnceByItsWorkerAndByTheOthersAfterOneTick(t *testing.T) {
	x := newHarness(t, keyBudgetConfig, withWorkers(2))
	body := chatBody("hello", 1000)
	// probe is a request of the same reservation settled at zero: it
	// reads the level and leaves its own whole reservation pending.
	probe := func(w int) int64 {
		r := x.doOn(w, call{key: "sk-refund", body: body, chunks: []string{chatResponse(0, 0)}})
		require.Equal(t, 200, r.status)
		return atoi(t, r.header("x-ratelimit-tokens-remaining"))
	}
	first := x.doOn(0, call{key: "sk-refund", body: body, chunks: []string{chatResponse(100, 50)}})
	require.Equal(t, 200, first.status)
	reserved := reservedBy(t, first)
	require.Greater(t, reserved, int64(150), "the first request's usage is under its reservation")

	require.Equal(t, 10000-150-reserved, probe(0), "the same worker's next request counts the refund at once")
	require.Equal(t, 10000-150-2*reserved, probe(1),
		"another worker does not see worker 0's refunds before the tick (its probe's whole reservation)")
	x.h.Tick()
	require.Equal(t, 10000-150-reserved, probe(1), "after one tick it does")
}

// A reload retires the store its streams settled through: what it had
// pending is written then, since no tick will flush it.
func TestAReloadWritesTheRetiredStoresRefunds(t *testing.T) {
	x := newHarness(t, keyBudgetConfig, withWorkers(2))
	body := chatBody("hello", 1000)
	first := x.doOn(0, call{key: "sk-reload-refund", body: body, chunks: []string{chatResponse(100, 50)}})
	require.Equal(t, 200, first.status)
	reserved := reservedBy(t, first)

	require.NoError(t, x.h.Reload(context.Background(), []byte(keyBudgetConfig)))
	r := x.doOn(1, call{key: "sk-reload-refund", body: body, chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, 10000-150-reserved, atoi(t, r.header("x-ratelimit-tokens-remaining")),
		"the other worker sees the refund without a tick")
}
