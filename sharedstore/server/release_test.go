package server

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

var holdSeq atomic.Int64

// clientHoldID is a fresh id of the form a filter chooses.
func clientHoldID() string {
	s := strconv.FormatInt(holdSeq.Add(1), 16)
	for len(s) < 32 {
		s = "c" + s
	}
	return s
}

// heldPlan takes a request unit, a concurrency unit and tokens on two
// dimensions: every kind of unit an aborted admission must not take.
type heldPlan struct {
	p    limit.Plan
	keys []string // hold entry keys, as the filter sends them
}

func newHeldPlan() heldPlan {
	rq, cc, tk1, tk2 := uniq("rq"), uniq("cc"), uniq("tk1"), uniq("tk2")
	return heldPlan{
		p: limit.Plan{
			Requests: []limit.Op{reqOp(rq, "api_key", minute(10)), concOp(cc, "global", 3)},
			Tokens:   []limit.Op{tokOp(tk1, "api_key", 400, minute(1000), day(5000)), tokOp(tk2, "model", 300, minute(2000))},
		},
		keys: []string{cc, tk1, tk2},
	}
}

// levels reads every period of every op of the plan, in plan order.
func (h heldPlan) levels(t *testing.T, e env) []float64 {
	t.Helper()
	var out []float64
	for _, group := range [2][]limit.Op{h.p.Requests, h.p.Tokens} {
		for _, op := range group {
			for _, l := range op.Limits {
				out = append(out, level(t, e, op.Key, l))
			}
		}
	}
	return out
}

// full is every period at capacity.
func (h heldPlan) full() []float64 {
	var out []float64
	for _, group := range [2][]limit.Op{h.p.Requests, h.p.Tokens} {
		for _, op := range group {
			for _, l := range op.Limits {
				out = append(out, float64(l.Capacity))
			}
		}
	}
	return out
}

func requireLevels(t *testing.T, want, got []float64, msg string) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 0.5, "%s (period %d)", msg, i)
	}
}

// The filter releases a hold it gave up on, and the release may reach
// Redis before the admission does: the admission then commits nothing at
// all, not even its request unit, and leaves no hold record behind.
func TestReleaseBeforeAdmitLeavesNoReservation(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			h, id := newHeldPlan(), clientHoldID()
			ended, err := e.store.Release(ctx, id, h.keys)
			require.NoError(t, err)
			require.False(t, ended, "nothing to end yet")
			o, err := e.store.AdmitHold(ctx, h.p, id)
			require.ErrorIs(t, err, ErrAdmissionAborted)
			require.False(t, o.Admitted())
			requireLevels(t, h.full(), h.levels(t, e), "an aborted admission takes nothing")
			n, err := e.c.Exists(ctx, holdKey(id)).Result()
			require.NoError(t, err)
			require.Zero(t, n, "no single-server hold record")
			for _, k := range h.keys {
				n, err = e.c.Exists(ctx, opHoldKey(k, id)).Result()
				require.NoError(t, err)
				require.Zero(t, n, "no cluster hold record for %s", k)
			}
			// The same plan under a fresh id is admitted as usual.
			o, err = e.store.AdmitHold(ctx, h.p, clientHoldID())
			require.NoError(t, err)
			require.True(t, o.Admitted())
		})
	}
}

func TestAdmitThenReleaseByTheClientsIDGivesEverythingBack(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			h, id := newHeldPlan(), clientHoldID()
			o, err := e.store.AdmitHold(ctx, h.p, id)
			require.NoError(t, err)
			require.True(t, o.Admitted())
			require.Equal(t, id, o.Hold.ID, "the hold carries the id its caller chose")
			ended, err := e.store.Release(ctx, id, h.keys)
			require.NoError(t, err)
			require.True(t, ended)
			want := h.full()
			want[0]-- // a request unit is never given back
			requireLevels(t, want, h.levels(t, e), "tokens and concurrency given back")
		})
	}
}

func TestDoubleReleaseIsIdempotentInEitherOrder(t *testing.T) {
	for _, e := range envs(t) {
		for _, admitFirst := range []bool{true, false} {
			t.Run(e.name+"/admit first="+strconv.FormatBool(admitFirst), func(t *testing.T) {
				ctx := context.Background()
				h := newHeldPlan()
				// Another standing hold keeps the buckets below capacity, so
				// a second give-back would show instead of being capped.
				other, err := e.store.AdmitHold(ctx, h.p, clientHoldID())
				require.NoError(t, err)
				require.True(t, other.Admitted())
				standing := h.levels(t, e)
				id := clientHoldID()
				if admitFirst {
					o, err := e.store.AdmitHold(ctx, h.p, id)
					require.NoError(t, err)
					require.True(t, o.Admitted())
				}
				for i := 0; i < 2; i++ {
					ended, err := e.store.Release(ctx, id, h.keys)
					require.NoError(t, err)
					require.Equal(t, admitFirst && i == 0, ended, "release %d", i)
				}
				if !admitFirst {
					_, err := e.store.AdmitHold(ctx, h.p, id)
					require.ErrorIs(t, err, ErrAdmissionAborted)
				}
				want := standing
				if admitFirst {
					want[0]-- // the released admission's request unit stays taken
				}
				requireLevels(t, want, h.levels(t, e), "given back at most once")
			})
		}
	}
}

// A tombstone on one op (a cluster release that reached only some slots)
// aborts the whole plan: every op that was taken is given back.
func TestTombstoneOnAnyOpAbortsTheWholePlan(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			h, id := newHeldPlan(), clientHoldID()
			_, err := e.store.Release(ctx, id, h.keys[2:])
			require.NoError(t, err)
			_, err = e.store.AdmitHold(ctx, h.p, id)
			require.ErrorIs(t, err, ErrAdmissionAborted)
			requireLevels(t, h.full(), h.levels(t, e), "nothing stays taken")
		})
	}
}

// An id that names a standing hold is refused rather than overwriting the
// record, which would lose the first hold's units.
func TestAdmissionWithAnIDInUseIsAbortedAndKeepsTheFirstHold(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			h, id := newHeldPlan(), clientHoldID()
			o, err := e.store.AdmitHold(ctx, h.p, id)
			require.NoError(t, err)
			require.True(t, o.Admitted())
			taken := h.levels(t, e)
			_, err = e.store.AdmitHold(ctx, h.p, id)
			require.ErrorIs(t, err, ErrAdmissionAborted)
			requireLevels(t, taken, h.levels(t, e), "the second admission took nothing")
			ended, err := e.store.Settle(ctx, id, h.keys, 100)
			require.NoError(t, err)
			require.True(t, ended, "the first hold still settles")
		})
	}
}

func TestSettleOfAnUnknownHoldLeavesNoTombstone(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			h, id := newHeldPlan(), clientHoldID()
			ended, err := e.store.Settle(ctx, id, h.keys, 10)
			require.NoError(t, err)
			require.False(t, ended)
			o, err := e.store.AdmitHold(ctx, h.p, id)
			require.NoError(t, err)
			require.True(t, o.Admitted(), "only a release refuses the id")
		})
	}
}

func TestTombstoneExpiresAfterTombstoneTTL(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	id := clientHoldID()
	_, err := e.store.Release(ctx, id, nil)
	require.NoError(t, err)
	ttl, err := e.c.PTTL(ctx, releasedKey(id)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 47*time.Hour, "default: the hold TTL")
	require.LessOrEqual(t, ttl, 48*time.Hour)

	short := NewBuckets(e.c, Options{TombstoneTTL: 10 * time.Second})
	id = clientHoldID()
	_, err = short.Release(ctx, id, nil)
	require.NoError(t, err)
	ttl, err = e.c.PTTL(ctx, releasedKey(id)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 9*time.Second)
	require.LessOrEqual(t, ttl, 10*time.Second)
}

func TestSingleServerAdmitWithTheClientsIDIsOneRoundTrip(t *testing.T) {
	e := newEnv(t, false)
	_, err := e.store.AdmitHold(context.Background(), sixDimensionPlan(uniq("rt"), 100), clientHoldID())
	require.NoError(t, err)
	require.Equal(t, int64(1), e.rt.n.Load())
	_, err = e.store.AdmitHold(context.Background(), sixDimensionPlan(uniq("rt"), 100), clientHoldID())
	require.NoError(t, err)
	require.Equal(t, int64(2), e.rt.n.Load())
}
