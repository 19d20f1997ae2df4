package abi

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func addrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func TestTakeHandsOverTheBufferTheHostWrote(t *testing.T) {
	var a allocator
	b := a.alloc(5)
	copy(b, "hello")
	got, ok := a.take(addrOf(b), 5)
	require.True(t, ok)
	require.Equal(t, "hello", string(got))
	require.Empty(t, a.pending, "a taken buffer must no longer be pinned")
}

func TestTakeForgetsEveryAllocationOfTheCall(t *testing.T) {
	var a allocator
	first := a.alloc(3)
	second := a.alloc(4)
	got, ok := a.take(addrOf(second), 2)
	require.True(t, ok)
	require.Len(t, got, 2)
	require.Equal(t, 2, cap(got), "the caller must not see past the returned size")
	require.Empty(t, a.pending)
	_, ok = a.take(addrOf(first), 3)
	require.False(t, ok, "a buffer from an earlier call is no longer ours to hand out")
}

func TestTakeRejectsForeignOrOversizedReturns(t *testing.T) {
	var a allocator
	b := a.alloc(4)
	_, ok := a.take(addrOf(b), 5)
	require.False(t, ok)
	a.alloc(4)
	_, ok = a.take(12345, 4)
	require.False(t, ok)
}

func TestZeroSizeAllocationHasAnAddressAndReturnsEmpty(t *testing.T) {
	var a allocator
	b := a.alloc(0)
	require.NotZero(t, addrOf(b[:1]))
	got, ok := a.take(0, 0)
	require.True(t, ok)
	require.Empty(t, got)
	require.Empty(t, a.pending)
}

func TestAScratchReadReusesOneBufferAcrossCalls(t *testing.T) {
	var a allocator
	a.reuse = true
	first := a.alloc(10)
	got, ok := a.take(addrOf(first), 10)
	require.True(t, ok)
	require.Len(t, got, 10)
	a.reuse = true
	second := a.alloc(8)
	require.Equal(t, addrOf(first), addrOf(second), "the next scratch read writes over the last one")
	got, ok = a.take(addrOf(second), 8)
	require.True(t, ok)
	require.Len(t, got, 8)
	require.False(t, a.reuse, "take ends the scratch read")
}

func TestOnlyTheFirstBufferOfAScratchCallIsShared(t *testing.T) {
	var a allocator
	a.reuse = true
	first := a.alloc(4)
	second := a.alloc(4)
	require.NotEqual(t, addrOf(first), addrOf(second))
	a.drop()
	third := a.alloc(4)
	require.NotEqual(t, addrOf(first), addrOf(third), "a plain read never gets the scratch buffer")
}

func TestAnOversizedScratchReadIsAllocatedAsUsual(t *testing.T) {
	var a allocator
	a.reuse = true
	small := a.alloc(16)
	a.drop()
	a.reuse = true
	big := a.alloc(maxScratch + 1)
	require.NotEqual(t, addrOf(small), addrOf(big))
	require.Less(t, cap(a.scratch), maxScratch+1, "the scratch buffer does not grow past its bound")
	got, ok := a.take(addrOf(big), maxScratch+1)
	require.True(t, ok)
	require.Len(t, got, maxScratch+1)
}

// A scratch read that asks for room gets its buffer past the room before
// it, with the room after it inside the scratch buffer too, and hands it
// back from there; the room is that read's alone.
func TestAScratchReadWithRoomIsServedInsideIt(t *testing.T) {
	var a allocator
	a.reuse, a.around = true, [2]int{16, 300}
	b := a.alloc(5)
	copy(b, "hello")
	require.GreaterOrEqual(t, len(a.scratch), 16+5+300)
	require.Equal(t, addrOf(a.scratch[16:]), addrOf(b))
	got, ok := a.take(addrOf(b), 5)
	require.True(t, ok)
	require.Equal(t, "hello", string(got))

	a.reuse = true
	c := a.alloc(3)
	require.Equal(t, addrOf(a.scratch), addrOf(c), "the next scratch read starts at the buffer again")
	_, ok = a.take(addrOf(c), 3)
	require.True(t, ok)

	a.around = [2]int{8, 8}
	a.take(0, 0)
	a.reuse = true
	d := a.alloc(3)
	require.Equal(t, addrOf(a.scratch), addrOf(d), "a call that ends without allocating drops its room")
}
