package local_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// FuzzGarbageInSharedDataNeverPanics writes arbitrary bytes where buckets
// and counters live (another module version, a corrupt host) and checks the
// store answers with an error or an outcome, never a panic, and that a
// value it could not read is left alone.
func FuzzGarbageInSharedDataNeverPanics(f *testing.F) {
	f.Add([]byte{1, 2}, []byte("7"), int64(5), int64(3))
	f.Add(bucket.AppendEncoded(nil, []bucket.State{{Level: 1e300}, {Level: -1e300}}), []byte("-1"), int64(-9), int64(1<<62))
	f.Add([]byte{}, []byte("x"), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, value, counter []byte, amount, actual int64) {
		fx := newFixture(3)
		op := tokens("api_key", "h1", amount, minute(600), day(6000))
		other := tokens("team", "t", amount, minute(600))
		require.NoError(t, fx.sd.Set(op.Key, value, 0))
		require.NoError(t, fx.sd.Set("tb|n|token_budget|tb|t|team|v1", counter, 0))
		for _, slot := range []string{"0", "1", "2", "lock"} { // where the team's bucket goes once its map is full
			require.NoError(t, fx.sd.Set("tb|o|t|team|v1|"+slot, value, 0))
		}
		plan := limit.Plan{Requests: []limit.Op{inflight("api_key", "h1", 1)}, Tokens: []limit.Op{other, op}}
		out := admit(t, fx.store, plan)
		if out.Admitted() {
			fx.store.Settle(out.Hold, actual)
			fx.store.Release(out.Hold)
		}
		if bucket.Decode(value, make([]bucket.State, 2)) != nil {
			require.False(t, out.Admitted())
			got, _, err := fx.sd.Get(op.Key)
			require.NoError(t, err)
			require.Equal(t, string(value), string(got))
		}
	})
}

// FuzzPendingRefundsFlushToImmediateLevels drives the pending refunds with
// arbitrary sequences of admissions, settlements, releases, clock moves and
// flushes (see refundOps): every answer, and every level after a flush,
// must be what a store writing each refund at once gives.
func FuzzPendingRefundsFlushToImmediateLevels(f *testing.F) {
	f.Add([]byte{0, 29, 3, 16, 0, 155, 2, 73, 0, 39, 4, 74, 1, 32, 4, 56, 1, 127, 4, 174, 3, 131, 4, 249})
	f.Add([]byte{0, 200, 0, 200, 2, 1, 5, 200, 2, 3, 4, 9, 0, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 2048 {
			ops = ops[:2048]
		}
		refundOps(t, ops)
	})
}
