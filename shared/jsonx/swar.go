package jsonx

import "unsafe"

// Word-at-a-time helpers: strings dominate LLM payloads, so the scanners test
// eight bytes per step for "anything interesting here?" and only then fall back
// to a byte loop. The tests below are exact for "at least one byte matches",
// which is all they are used for, so the result does not depend on byte order.

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load64 reads 8 bytes at d[i:i+8]; callers guarantee i+8 <= len(d).
func load64(d []byte, i int) uint64 {
	_ = d[i+7]
	return *(*uint64)(unsafe.Pointer(&d[i]))
}

// hasZero is non-zero iff some byte of x is 0.
func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }

// hasLess is non-zero iff some byte of x is < n (n <= 128).
func hasLess(x uint64, n uint64) uint64 { return (x - lsb*n) &^ x & msb }

// plainStringWord: no '"', no '\\' and no control byte in the word, so a
// validating string scan may skip it.
func plainStringWord(x uint64) bool {
	return hasZero(x^(lsb*'"'))|hasZero(x^(lsb*'\\'))|hasLess(x, 0x20) == 0
}

// plainSkipWord: no '"' and no '\\', so a trusting string skip may jump it.
func plainSkipWord(x uint64) bool {
	return hasZero(x^(lsb*'"'))|hasZero(x^(lsb*'\\')) == 0
}

// plainContainerWord: no '"', '[', ']', '{' or '}' ('[' and '{' differ only in
// bit 5, as do ']' and '}', so OR-ing 0x20 folds four tests into two).
func plainContainerWord(x uint64) bool {
	y := x | lsb*0x20
	return hasZero(x^(lsb*'"'))|hasZero(y^(lsb*'{'))|hasZero(y^(lsb*'}')) == 0
}

// plainTextWord: only ASCII and no '\\', so decoded length equals raw length.
func plainTextWord(x uint64) bool {
	return (x&msb)|hasZero(x^(lsb*'\\')) == 0
}
