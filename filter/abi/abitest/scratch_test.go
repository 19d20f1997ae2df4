package abitest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

func TestAScratchReadIsOverwrittenByTheNextOneAsInTheVM(t *testing.T) {
	f := New(nil)
	require.Equal(t, abi.StatusOK, f.SetSharedData("a", []byte("first"), 0))
	require.Equal(t, abi.StatusOK, f.SetSharedData("b", []byte("other"), 0))
	f.SetBufferData(abi.BufferResponseBody, []byte("chunk"))

	a, cas, st := f.GetSharedDataScratch("a")
	require.Equal(t, abi.StatusOK, st)
	require.Equal(t, "first", string(a))
	require.Equal(t, uint32(1), cas)

	body, st := f.GetBufferScratch(abi.BufferResponseBody, 0, 5)
	require.Equal(t, abi.StatusOK, st)
	require.Equal(t, "chunk", string(body))
	require.Equal(t, "chunk", string(a), "the earlier value shared the buffer")

	_, _, st = f.GetSharedDataScratch("missing")
	require.Equal(t, abi.StatusNotFound, st)
}
