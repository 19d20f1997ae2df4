package jsonx

import (
	"math/bits"
	"unsafe"
)

// Word-at-a-time helpers: strings dominate LLM payloads, so the scanners test
// eight bytes per step for "anything interesting here?" and only then fall back
// to a byte loop. The tests below are exact for "at least one byte matches",
// which is all they are used for. On little-endian machines (amd64, wasm) the
// lowest flagged byte is also exactly the first match, so firstFlag can jump
// straight to it; elsewhere it returns 0 and callers fall back to a byte loop.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// littleEndian is decided once from memory so no build tags are needed.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// firstFlag returns the index of the first flagged byte of a non-zero mask
// from the tests below, or 0 when byte order does not allow knowing it.
func firstFlag(mask uint64) int {
	if !littleEndian {
		return 0
	}
	return bits.TrailingZeros64(mask) >> 3
}

// load64 reads 8 bytes at d[i:i+8]. Every caller loops on `i+8 <= len(d)`
// with i >= 0, so the load is in bounds and the bounds check is left out.
func load64(d []byte, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(d)), i))
}

// loadString64 is load64 for a string: callers loop on `i+8 <= len(s)`.
func loadString64(s string, i int) uint64 {
	return *(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.StringData(s)), i))
}

// plainWord says all eight bytes of x are ASCII written as they are in a
// JSON string under options o (see plain).
func plainWord(x uint64, o StringOptions) bool {
	m := x&msb | stringStops(x)
	if o&LikeMarshal != 0 {
		m |= hasZero(x^(lsb*'<')) | hasZero(x^(lsb*'>')) | hasZero(x^(lsb*'&'))
	}
	if o&EscapeDEL != 0 {
		m |= hasZero(x ^ (lsb * 0x7f))
	}
	return m == 0
}

// hasZero is non-zero iff some byte of x is 0.
func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }

// hasLess is non-zero iff some byte of x is < n (n <= 128).
func hasLess(x uint64, n uint64) uint64 { return (x - lsb*n) &^ x & msb }

// stringStops flags '"', '\\' and control bytes: where a validating string
// scan must look closer. It is hasZero(x^'"') | hasZero(x^'\\') |
// hasLess(x, 0x20) with the common "&^ x & msb" taken once: xor with a
// byte below 0x80 keeps each top bit, so every term masks the same bits.
func stringStops(x uint64) uint64 {
	return ((x ^ (lsb * '"') - lsb) | (x ^ (lsb * '\\') - lsb) | (x - lsb*0x20)) &^ x & msb
}

// quoteStops flags '"'.
func quoteStops(x uint64) uint64 { return hasZero(x ^ (lsb * '"')) }

// containerStops flags '"', '[', ']', '{' and '}' ('[' and '{' differ only in
// bit 5, as do ']' and '}', so OR-ing 0x20 folds four tests into two).
// The top bits are masked once, as in stringStops (y keeps x's top bits).
func containerStops(x uint64) uint64 {
	y := x | lsb*0x20
	return ((x ^ (lsb * '"') - lsb) | (y ^ (lsb * '{') - lsb) | (y ^ (lsb * '}') - lsb)) &^ x & msb
}

// plainTextWord: only ASCII and no '\\', so decoded length equals raw length.
func plainTextWord(x uint64) bool {
	return (x&msb)|hasZero(x^(lsb*'\\')) == 0
}
