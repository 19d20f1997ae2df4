package abi

import (
	"encoding/binary"
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
func decodePairs(b []byte) (pairs [][2]string, ok bool) {
	if len(b) == 0 {
		return nil, true
	}
	if len(b) < 4 {
		return nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	// Each pair needs at least 8 size bytes and 2 terminators.
	if n > uint64(len(b)-4)/10 {
		return nil, false
	}
	pairs = make([][2]string, n)
	sizes := b[4:]
	at := uint64(4) + 8*n
	end := uint64(len(b))
	for i := uint64(0); i < n; i++ {
		for j := 0; j < 2; j++ {
			size := uint64(binary.LittleEndian.Uint32(sizes[8*i+4*uint64(j):]))
			if size >= end-at || b[at+size] != 0 {
				return nil, false
			}
			pairs[i][j] = unsafe.String(&b[at], size)
			at += size + 1
		}
	}
	return pairs, true
}
