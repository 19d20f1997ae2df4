package identity

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestACachedKeyHashIsTheKeysHash(t *testing.T) {
	t.Parallel()
	c := NewKeyCache(4)
	for _, raw := range []string{"sk-a", "sk-b", "sk-a", "", "sk-a ", "sk-b"} {
		require.Equal(t, HashKey(raw), c.Hash(raw), "%q", raw)
	}
	require.Equal(t, 4, c.Len())
}

func TestTheKeyCacheNeverHoldsMoreThanItsBound(t *testing.T) {
	t.Parallel()
	c := NewKeyCache(8)
	for i := range 100 {
		raw := "sk-" + strconv.Itoa(i)
		require.Equal(t, HashKey(raw), c.Hash(raw))
		require.LessOrEqual(t, c.Len(), 8)
	}
	require.Equal(t, HashKey("sk-3"), c.Hash("sk-3"), "a key forgotten when the cache started over is hashed again")
}

// Keys of one length and last byte share a recent slot: each still gets
// its own hash, from the slot or from the map behind it, whichever holds it.
func TestKeysSharingARecentSlotKeepTheirOwnHashes(t *testing.T) {
	t.Parallel()
	c := NewKeyCache(4)
	a, b := "sk-a1", "sk-b1"
	require.Equal(t, recentKey(a), recentKey(b), "the test needs keys that share a slot")
	for range 3 {
		require.Equal(t, HashKey(a), c.Hash(a))
		require.Equal(t, HashKey(b), c.Hash(b))
	}
	require.Equal(t, 2, c.Len(), "each key hashed once, then found")
	for i := range 8 { // the map starts over; the slot still answers for b
		c.Hash("sk-" + strconv.Itoa(i) + "x")
	}
	require.Equal(t, HashKey(b), c.Hash(b))
	require.Equal(t, HashKey(a), c.Hash(a))
}
