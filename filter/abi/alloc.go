package abi

import "unsafe"

// allocator backs proxy_on_memory_allocate. The host asks for memory only
// while one of our host calls runs, to return a value through it; the binding
// then takes that buffer back by address and hands it to the caller.
//
// Ownership: a buffer is referenced from pending from the moment the host
// asks for it until the host call that caused it returns, so the GC cannot
// reclaim it while the host writes (Go's heap does not move). take ends every
// pending reference, whether the value was wanted, the call failed after
// allocating, or the host allocated more than once: nothing outlives the host
// call that caused it, and nothing needs an explicit free.
//
// A scratch read (reuse set before the host call) gets its first buffer from
// scratch instead: one buffer the binding keeps and hands out again on the
// next scratch read, so a value decoded at once costs no allocation. Only
// the first allocation of the call is served from it, so two buffers of one
// call never share memory.
type allocator struct {
	pending [][]byte

	reuse   bool
	scratch []byte
	// around is free space a scratch read asks for around its buffer:
	// before it and after it, within the scratch buffer (HeaderAdder).
	around [2]int
	// lent says the running call was served the scratch buffer, which
	// scratch itself keeps alive: it is not put on pending; lentAt is
	// where in scratch the buffer starts.
	lent   bool
	lentAt int
}

// maxScratch bounds the scratch buffer: a larger value is allocated as
// usual rather than pinned for the VM's life.
const maxScratch = 64 << 10

// alloc returns size bytes the host may write, kept alive until take. A zero
// size still gets a distinct non-nil address, since 0 reads as failure.
func (a *allocator) alloc(size int) []byte {
	if a.reuse {
		a.reuse = false
		before, need := a.around[0], a.around[0]+size+a.around[1]
		a.around = [2]int{}
		if size > 0 && need <= maxScratch {
			if cap(a.scratch) < need {
				a.scratch = make([]byte, max(need, 2*cap(a.scratch), 256))
			}
			a.lent, a.lentAt = true, before
			return a.scratch[before : before+size]
		}
	}
	n := size
	if n <= 0 {
		n = 1
	}
	b := make([]byte, n)
	a.pending = append(a.pending, b)
	return b[:max(size, 0)]
}

// take returns the pending buffer at addr cut to size and forgets every
// pending buffer. ok is false when size > 0 and no pending buffer of at least
// size bytes starts at addr: the host returned memory we did not give it.
func (a *allocator) take(addr uintptr, size int) (b []byte, ok bool) {
	a.reuse, a.around = false, [2]int{}
	if a.lent {
		a.lent = false
		if s := a.scratch[a.lentAt:]; size > 0 && size <= cap(s) && uintptr(unsafe.Pointer(unsafe.SliceData(s))) == addr {
			b = s[:size:size]
		}
	}
	for i, p := range a.pending {
		if b == nil && size > 0 && size <= cap(p) && uintptr(unsafe.Pointer(unsafe.SliceData(p))) == addr {
			b = p[:size:size]
		}
		a.pending[i] = nil
	}
	a.pending = a.pending[:0]
	if size <= 0 {
		return nil, size == 0
	}
	return b, b != nil
}

// drop forgets every pending buffer without taking one.
func (a *allocator) drop() { a.take(0, 0) }
