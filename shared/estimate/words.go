package estimate

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// words charges the run of words that starts with the letter at s[i],
// together with the single spaces between them, and returns where the run
// ends and u plus its cost.
//
// Prose is mostly lower-case words one space apart, so this is the loop the
// estimator spends its time in, and it is shaped for Go's wasm backend,
// where every taken branch goes back through the function's dispatch loop
// and a call costs tens of instructions: one call per run of words rather
// than per word, each word's lower-case letters found eight at a time with
// one load and a few exact per-byte operations, and while the text has room
// for the loads, a word followed by one space or punctuation character and
// a letter charged on one straight path, ending in the next word.
func words(s []byte, i int, u int64) (int, int64) {
	n := len(s)
	for {
		for i+17 <= n {
			// An optional capital then lower-case letters, fewer than
			// consonantRunLen so that the word is never a blob: the rest
			// take the general path below.
			k := bits.TrailingZeros64(notLower(load64(s, i+1))) &^ 7
			l := 1 + k>>3
			j := i + l
			y := load64(s, j)
			if l >= consonantRunLen || byteClass[byte(y)] <= clsDigit {
				break
			}
			u += unit + int64(max(l-wordFreeLen, 0))*wordExtra
			// What follows the word, as scan charges it: a space before
			// a letter is free, a lone punctuation character one token.
			f := follow[(followClass[byte(y)]<<4|followClass[byte(y>>8)]<<2|followClass[byte(y>>16)])&63]
			if f == 0 {
				return j, u
			}
			u += int64(f>>2) * unit
			i = j + int(f&3)
		}
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

// load64 reads s[i:i+8] little-endian, without the bounds checks that
// cost the wasm VM more than the load: callers have checked i+8 <= len(s).
func load64(s []byte, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), i))[:])
}

// Classes of the bytes after a word for follow: a letter, a space, a
// punctuation character, anything else.
const (
	fLetter = iota
	fSpace
	fPunct
	fOther
)

var followClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case byteClass[c] <= clsUpper:
			t[c] = fLetter
		case c == ' ':
			t[c] = fSpace
		case byteClass[c] == clsPunct:
			t[c] = fPunct
		default:
			t[c] = fOther
		}
	}
	return t
}()

// follow is, for the classes of the three bytes after a word, where the
// next word starts (the low two bits; 0: no word follows on the fast path)
// and the tokens charged on the way (the bits above).
var follow = func() (t [64]uint8) {
	for b := range 4 {
		t[fSpace<<4|fLetter<<2|b] = 1        // " w": free
		t[fPunct<<4|fLetter<<2|b] = 1<<2 | 1 // ",w": the punctuation
	}
	t[fPunct<<4|fSpace<<2|fLetter] = 1<<2 | 2 // ", w"
	return t
}()

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
