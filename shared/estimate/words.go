package estimate

import (
	"encoding/binary"
	"math/bits"
)

// words charges the run of words that starts with the letter at s[i],
// together with the single spaces between them, and returns where the run
// ends and u plus its cost.
//
// Prose is mostly lower-case words one space apart, so this is the loop the
// estimator spends its time in, and it is shaped for Go's wasm backend: one
// call per run of words rather than per word (a call costs tens of
// instructions there), and each word's lower-case letters found eight at a
// time with one load and a few exact per-byte operations instead of a table
// lookup and two branches per letter.
func words(s []byte, i int, u int64) (int, int64) {
	n := len(s)
	for {
		// An optional capital then lower-case letters: if the word ends
		// there it is one piece, never a blob.
		j := i + 1
		var next byte // s[j] when j < n
		for {
			if j+8 > n {
				for j < n && byteClass[s[j]] == clsLower {
					j++
				}
				if j < n {
					next = s[j]
				}
				break
			}
			x := binary.LittleEndian.Uint64(s[j:])
			if m := notLower(x); m != 0 {
				k := bits.TrailingZeros64(m) &^ 7
				j += k >> 3
				next = byte(x >> k)
				break
			}
			j += 8
		}
		if j < n && byteClass[next] <= clsDigit {
			// Capitals or digits follow: a word of several pieces.
			for j < n && byteClass[s[j]] <= clsDigit {
				j++
			}
			return j, u + wordCost(s[i:j])
		}
		// Up to wordFreeLen letters cost one token whatever their case
		// (a lone capital is all capitals, charged the same).
		u += unit
		if j-i > wordFreeLen {
			u += pieceCost(s[i:j], 0, false) - unit
		}
		// A space then another word: the space rides on that word.
		if next == ' ' && j+1 < n && byteClass[s[j+1]] <= clsUpper {
			i = j + 1
			continue
		}
		return j, u
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// notLower sets the top bit of each byte of x that is not 'a'..'z'. The
// sums stay within each byte, so the test is exact for every byte.
func notLower(x uint64) uint64 {
	h := x &^ msb
	geA := h + lsb*(0x80-'a')
	gtZ := h + lsb*(0x80-'z'-1)
	return ^(geA &^ gtZ &^ x) & msb
}
