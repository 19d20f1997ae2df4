package abi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// requireFound checks that each id is registered with its context.
func requireFound(t *testing.T, r *registry[string], want map[uint32]string) {
	t.Helper()
	for id, ctx := range want {
		got, ok := r.get(id)
		require.True(t, ok, "id %d", id)
		require.Equal(t, ctx, got, "id %d", id)
	}
	require.Equal(t, len(want), r.len())
}

// A context is found by its id whether it holds its slot or another live
// context holds it first.
func TestARegistryFindsEveryContextWhateverItsSlotHolds(t *testing.T) {
	t.Parallel()
	r := newRegistry[string]()
	// Ids one table apart share a slot: the first holds it, the others
	// overflow.
	a, b, c := uint32(5), uint32(5+registrySlots), uint32(5+2*registrySlots)
	r.put(a, "a")
	r.put(b, "b")
	r.put(c, "c")
	r.put(6, "six")
	requireFound(t, &r, map[uint32]string{a: "a", b: "b", c: "c", 6: "six"})

	r.remove(c) // an overflowed one
	_, ok := r.get(c)
	require.False(t, ok)
	r.remove(a) // the slot's holder
	_, ok = r.get(a)
	require.False(t, ok, "a removed context is gone, though others shared its slot")
	requireFound(t, &r, map[uint32]string{b: "b", 6: "six"})

	// The freed slot takes the next context that falls into it.
	d := uint32(5 + 3*registrySlots)
	r.put(d, "d")
	requireFound(t, &r, map[uint32]string{b: "b", d: "d", 6: "six"})
	r.remove(b)
	r.remove(d)
	r.remove(6)
	r.remove(6) // twice: nothing left to forget
	requireFound(t, &r, map[uint32]string{})
}

// Registering an id again replaces its context, wherever it is kept.
func TestRegisteringAnIdAgainReplacesItsContext(t *testing.T) {
	t.Parallel()
	r := newRegistry[string]()
	a, b := uint32(1), uint32(1+registrySlots)
	r.put(a, "a")
	r.put(b, "b")
	r.put(a, "a2")
	r.put(b, "b2")
	requireFound(t, &r, map[uint32]string{a: "a2", b: "b2"})
}

func TestAnEmptySlotNeverAnswersForIdZero(t *testing.T) {
	r := newRegistry[string]()
	_, ok := r.get(0)
	require.False(t, ok, "the zero slot is empty, not the context of id 0")
	r.put(0, "vm")
	requireFound(t, &r, map[uint32]string{0: "vm"})
}
