package abi

import (
	"encoding/binary"
	"slices"
	"unsafe"
)

// The proxy-wasm header-pairs encoding: a little-endian u32 count, then the
// u32 key size and u32 value size of each pair, then each key and value
// followed by a NUL byte. Maps and lists in properties use it too.

// AppendPairs appends the encoding of pairs to dst and returns the extended
// slice. An empty list encodes as a zero count (4 bytes), as the Go SDK
// sends it.
func AppendPairs(dst []byte, pairs [][2]string) []byte {
	size := 4
	for i := range pairs {
		size += 8 + len(pairs[i][0]) + len(pairs[i][1]) + 2
	}
	start := len(dst)
	if cap(dst)-start < size {
		grown := make([]byte, start, start+size)
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:start+size]
	b := dst[start:]
	binary.LittleEndian.PutUint32(b, uint32(len(pairs)))
	at := 4
	for i := range pairs {
		binary.LittleEndian.PutUint32(b[at:], uint32(len(pairs[i][0])))
		binary.LittleEndian.PutUint32(b[at+4:], uint32(len(pairs[i][1])))
		at += 8
	}
	for i := range pairs {
		at += copy(b[at:], pairs[i][0])
		b[at] = 0
		at++
		at += copy(b[at:], pairs[i][1])
		b[at] = 0
		at++
	}
	return dst
}

// decodePairs parses the pairs encoding; ok is false when b is truncated,
// sizes overrun it or a terminator is missing. The strings share b's
// memory, which is only safe when nothing writes to b afterwards (a buffer
// the host returned and the binding handed over).
func decodePairs(b []byte) (pairs [][2]string, ok bool) { return appendDecodedPairs(nil, b) }

// appendDecodedPairs is decodePairs appending to dst, so a caller that
// reuses dst allocates nothing for the list: in the VM a fresh list is a
// scanned allocation of 32 bytes a pair. On failure dst comes back as it
// was given.
func appendDecodedPairs(dst [][2]string, b []byte) (pairs [][2]string, ok bool) {
	if len(b) == 0 {
		return dst, true
	}
	if len(b) < 4 {
		return dst, false
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	// Each pair needs at least 8 size bytes and 2 terminators.
	if n > uint64(len(b)-4)/10 {
		return dst, false
	}
	start := len(dst)
	pairs = slices.Grow(dst, int(n))[:start+int(n)]
	out := pairs[start:]
	sizes := b[4 : 4+8*n]
	at := 4 + 8*n
	end := uint64(len(b))
	// One pair a turn, key then value: a loop over the two would go back
	// through the function's dispatch once more per string in the VM.
	for i := range out {
		// Both sizes in one load: key size low, value size high.
		kv := binary.LittleEndian.Uint64((*[8]byte)(sizes[8*i:])[:])
		ks, vs := kv&0xffffffff, kv>>32
		if ks >= end-at || b[at+ks] != 0 {
			return dst, false
		}
		out[i][0] = unsafe.String(&b[at], ks)
		at += ks + 1
		if vs >= end-at || b[at+vs] != 0 {
			return dst, false
		}
		out[i][1] = unsafe.String(&b[at], vs)
		at += vs + 1
	}
	return pairs, true
}
