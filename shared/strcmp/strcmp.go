// Package strcmp compares strings the way the filter's VM does cheaply.
//
// Go's wasm port compares strings one byte per turn of a loop (its
// memequal has no wider form), so an 80-byte bucket key costs the VM about
// as much to compare as a shared-data call. Equal compares eight bytes per
// turn. Natively it is no faster than ==, which callers outside the VM's hot
// path should keep using.
//
// Compiled into the .wasm: no fmt, no os, never panics.
package strcmp

import (
	"encoding/binary"
	"unsafe"
)

// Equal is a == b. It is small enough to be put in line, so strings of
// different lengths, empty ones and one string compared with itself cost no
// call (in the VM a call costs several hundred instructions).
func Equal(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || sameWords(a, b))
}

// sameWords is Equal for two strings of one length.
func sameWords(a, b string) bool {
	n := len(a)
	pa, pb := unsafe.Pointer(unsafe.StringData(a)), unsafe.Pointer(unsafe.StringData(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if word(pa, i) != word(pb, i) {
			return false
		}
	}
	for ; i < n; i++ {
		if *(*byte)(unsafe.Add(pa, i)) != *(*byte)(unsafe.Add(pb, i)) {
			return false
		}
	}
	return true
}

// word is the eight bytes at p+i, without a bounds check: sameWords has
// checked that they lie within both strings.
func word(p unsafe.Pointer, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(p, i))[:])
}
