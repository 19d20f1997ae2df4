package abi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A context is found by its id whatever the slots hold: the map behind them
// has every context, and a slot answers only for the id it holds.
func TestARegistryFindsEveryContextWhateverItsSlotHolds(t *testing.T) {
	r := newRegistry[string]()
	// Ids one table apart share a slot; each evicts the other from it.
	a, b, c := uint32(5), uint32(5+registrySlots), uint32(5+2*registrySlots)
	r.put(a, "a")
	r.put(b, "b")
	r.put(c, "c")
	for _, want := range []struct {
		id  uint32
		ctx string
	}{{a, "a"}, {b, "b"}, {c, "c"}, {a, "a"}, {c, "c"}} {
		got, ok := r.get(want.id)
		require.True(t, ok, "id %d", want.id)
		require.Equal(t, want.ctx, got, "id %d", want.id)
	}
	require.Equal(t, 3, r.len())

	// Removing one id leaves the others found, in the slot or not.
	r.remove(c)
	_, ok := r.get(c)
	require.False(t, ok, "a removed context is gone from its slot too")
	got, ok := r.get(b)
	require.True(t, ok)
	require.Equal(t, "b", got)
	r.remove(a) // not in the slot (b is): the map forgets it all the same
	_, ok = r.get(a)
	require.False(t, ok)
	got, ok = r.get(b)
	require.True(t, ok)
	require.Equal(t, "b", got)
	require.Equal(t, 1, r.len())
}

func TestAnEmptySlotNeverAnswersForIdZero(t *testing.T) {
	r := newRegistry[string]()
	_, ok := r.get(0)
	require.False(t, ok, "the zero slot is empty, not the context of id 0")
	r.put(0, "vm")
	got, ok := r.get(0)
	require.True(t, ok)
	require.Equal(t, "vm", got)
}
