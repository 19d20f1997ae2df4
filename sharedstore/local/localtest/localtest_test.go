package localtest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
)

func TestSharedDataFollowsEnvoysCasRules(t *testing.T) {
	sd := New()
	_, _, err := sd.Get("k")
	require.ErrorIs(t, err, local.ErrNotFound)

	require.NoError(t, sd.Set("k", []byte("a"), 12345), "a missing key is never cas-checked")
	v, cas, err := sd.Get("k")
	require.NoError(t, err)
	require.Equal(t, "a", string(v))
	require.Equal(t, uint32(1), cas, "the counter starts at 1")

	require.ErrorIs(t, sd.Set("k", []byte("b"), cas+7), local.ErrCasMismatch)
	require.NoError(t, sd.Set("k", []byte("b"), cas))
	require.ErrorIs(t, sd.Set("k", []byte("c"), cas), local.ErrCasMismatch, "a used cas is stale")
	require.NoError(t, sd.Set("k", []byte("c"), 0), "cas 0 writes unconditionally")

	v, cas, _ = sd.Get("k")
	require.Equal(t, "c", string(v))
	require.Equal(t, uint32(3), cas, "one counter for every write")
}

func TestTheCasCounterSkipsZeroWhenItWraps(t *testing.T) {
	sd := NewAt(math.MaxUint32)
	require.NoError(t, sd.Set("a", nil, 0))
	require.NoError(t, sd.Set("b", nil, 0))
	_, ca, _ := sd.Get("a")
	_, cb, _ := sd.Get("b")
	require.Equal(t, uint32(math.MaxUint32), ca)
	require.Equal(t, uint32(1), cb)
}

func TestValuesAreCopiedAcrossTheBoundary(t *testing.T) {
	sd := New()
	in := []byte("abc")
	require.NoError(t, sd.Set("k", in, 0))
	in[0] = 'x'
	out, _, _ := sd.Get("k")
	require.Equal(t, "abc", string(out))
	out[0] = 'y'
	again, _, _ := sd.Get("k")
	require.Equal(t, "abc", string(again))
}
