package local_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

const sec = int64(1e9)

// clock is a frozen, hand-moved clock in Unix nanoseconds.
type clock struct{ t int64 }

func (c *clock) now() int64 { return c.t }

func minute(c int64) limit.Limit {
	return limit.Limit{Budget: limit.PeriodMinute, Capacity: c, RefillPerSec: float64(c) / 60}
}

func day(c int64) limit.Limit {
	return limit.Limit{Budget: limit.PeriodDay, Capacity: c, RefillPerSec: float64(c) / 86400}
}

func second(burst int64, rate float64) limit.Limit {
	return limit.Limit{Budget: limit.PeriodSecond, Capacity: burst, RefillPerSec: rate}
}

func concurrent(n int64) limit.Limit {
	return limit.Limit{Budget: limit.PeriodConcurrent, Capacity: n}
}

// dimension is the named dimension; the helpers take names so the tests
// read like the bucket keys they build.
func dimension(name string) limit.Dimension {
	d, ok := limit.ParseDimension(name)
	if !ok {
		panic("no dimension " + name)
	}
	return d
}

func tokens(dim, id string, amount int64, limits ...limit.Limit) limit.Op {
	return limit.Op{Key: "tb|t|" + dim + "|v1|" + id, Kind: limit.KindTokens, Dimension: dimension(dim),
		Limits: limits, Amount: amount, Private: dim == "api_key"}
}

func requests(dim, id string, limits ...limit.Limit) limit.Op {
	return limit.Op{Key: "tb|r|" + dim + "|v1|" + id, Kind: limit.KindRequests, Dimension: dimension(dim),
		Limits: limits, Amount: 1, Private: dim == "api_key"}
}

func inflight(dim, id string, n int64) limit.Op {
	return limit.Op{Key: "tb|c|" + dim + "|v1|" + id, Kind: limit.KindConcurrency, Dimension: dimension(dim),
		Limits: []limit.Limit{concurrent(n)}, Amount: 1, Private: dim == "api_key"}
}

type fixture struct {
	sd    *localtest.SharedData
	clock *clock
	store *local.Store
}

func newFixture(maxBuckets int) *fixture {
	f := &fixture{sd: localtest.New(), clock: &clock{t: 1_700_000_000 * sec}}
	f.store = local.New(f.sd, f.clock.now, maxBuckets)
	return f
}

// admit runs Admit and checks that the answer came before it returned.
func admit(t testing.TB, s *local.Store, plan limit.Plan) limit.Outcome {
	t.Helper()
	var out limit.Outcome
	called := 0
	s.Admit(plan, func(o limit.Outcome) { out = o; called++ })
	require.Equal(t, 1, called, "the shared-data store answers exactly once, synchronously")
	return out
}

// levels reads op's bucket levels straight from shared data (nil: never created).
func levels(t testing.TB, sd *localtest.SharedData, op limit.Op) []float64 {
	t.Helper()
	states := storedStates(t, sd, op)
	if states == nil {
		return nil
	}
	out := make([]float64, len(states))
	for i, s := range states {
		out[i] = s.Level
	}
	return out
}

// storedStates decodes op's bucket as shared data holds it (nil: never created).
func storedStates(t testing.TB, sd *localtest.SharedData, op limit.Op) []bucket.State {
	t.Helper()
	value, _, err := sd.Get(op.Key)
	if err == local.ErrNotFound {
		return nil
	}
	require.NoError(t, err)
	states := make([]bucket.State, len(op.Limits))
	require.NoError(t, bucket.Decode(value, states))
	return states
}

// slotLevels reads the levels of the bucket in a reusable slot (n states),
// nil when the slot was never written.
func slotLevels(t testing.TB, sd *localtest.SharedData, key string, n int) []float64 {
	t.Helper()
	value, _, err := sd.Get(key)
	if err == local.ErrNotFound {
		return nil
	}
	require.NoError(t, err)
	states := make([]bucket.State, n)
	require.NoError(t, bucket.Decode(value[:bucket.EncodedLen(n)], states))
	out := make([]float64, n)
	for i, s := range states {
		out[i] = s.Level
	}
	return out
}
