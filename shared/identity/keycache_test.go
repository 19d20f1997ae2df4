package identity

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestACachedKeyHashIsTheKeysHash(t *testing.T) {
	c := NewKeyCache(4)
	for _, raw := range []string{"sk-a", "sk-b", "sk-a", "", "sk-a ", "sk-b"} {
		require.Equal(t, HashKey(raw), c.Hash(raw), "%q", raw)
	}
	require.Equal(t, 4, c.Len())
}

func TestTheKeyCacheNeverHoldsMoreThanItsBound(t *testing.T) {
	c := NewKeyCache(8)
	for i := range 100 {
		raw := "sk-" + strconv.Itoa(i)
		require.Equal(t, HashKey(raw), c.Hash(raw))
		require.LessOrEqual(t, c.Len(), 8)
	}
	require.Equal(t, HashKey("sk-3"), c.Hash("sk-3"), "a key forgotten when the cache started over is hashed again")
}
