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
		// While the text has room for the loads, the turns of the fast
		// loop (wordsFast) take the common words.
		var done bool
		if i, u, done = wordsFast(s, i, u); done {
			return i, u
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
			x := load64(s, j)
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
			return j, plusWordCost(u, s[i:j])
		}
		// Up to wordFreeLen letters cost one token whatever their case
		// (a lone capital is all capitals, charged the same).
		if j-i > wordFreeLen {
			u = plusPieceCost(u, s[i:j])
		} else {
			u += unit
		}
		// A space then another word: the space rides on that word.
		if next == ' ' && j+1 < n && byteClass[s[j+1]] <= clsUpper {
			i = j + 1
			continue
		}
		return j, u
	}
}

// wordsFastGo is words' fast loop, the reference of wordsFast: while the
// text has room for the loads (25 bytes from i), a turn takes the word at
// the letter s[i] and what follows it, ending at the next word, and after
// the common space before a letter the next short word as well (a turn
// costs the VM about as much again as a short word). It returns where it
// stopped and u plus what it charged, and done when the run of words ends
// there (words returns); otherwise words' own loop goes on at next (a word
// of several pieces, a long word, the last bytes).
func wordsFastGo(s []byte, i int, u int64) (int, int64, bool) {
	n := len(s)
	for i+25 <= n {
		var j int
		var y uint64 // the bytes at j, after the word
		// An optional capital then lower-case letters.
		l := 1 + bits.TrailingZeros64(notLower(load64(s, i+1)))>>3
		if l >= consonantRunLen {
			// A long word, so that only such words pay for counting
			// vowels: up to 16 letters here. (Written before the short
			// word's branch: in that order the VM ran 2 % fewer
			// instructions on prose and code.)
			if l > 8 {
				l = 9 + bits.TrailingZeros64(notLower(load64(s, i+9)))>>3
			}
			j = i + l
			y = load64(s, j)
			if l > 16 || byteClass[byte(y)] <= clsDigit {
				return i, u, false
			}
			// pieceCost(s[i:j], 0, false), its vowels counted eight at a
			// time, in line: a call here would make u live across it,
			// and Go's wasm backend then stores u to the stack on every
			// turn of the loop.
			v := bits.OnesCount64(vowelBytes(load64(s, i))) +
				bits.OnesCount64(vowelBytes(load64(s, i+8))&(1<<uint(8*(l-8))-1))
			if v*6 < l {
				u += unit + int64(l-1)*blobExtra
			} else {
				u += unit + int64(l-wordFreeLen)*wordExtra
			}
		} else {
			j = i + l
			y = load64(s, j)
			if uint8(byte(y)-'A') < 26 || uint8(byte(y)-'0') < 10 {
				return i, u, false // capitals or digits follow: a word of several pieces
			}
			u += unit + int64(max(l-wordFreeLen, 0))*wordExtra
		}
		// What follows the word, as scan charges it: a space before
		// a letter is free, a lone punctuation character is a token,
		// and a space after it is free again before a letter. The
		// other tests are each a 0 or 1 from a sign bit.
		// (The space's letter is a comparison, not isLetter: a 0 or 1
		// tested against 0 costs the VM a second test.)
		b1 := byte(y >> 8)
		if byte(y) == ' ' && uint8(b1|0x20-'a') < 26 {
			i = j + 1
			// The next word on the same turn when it is short and
			// followed by a space and a letter too, prose's common
			// case, charged as the short word above; otherwise the
			// next turn starts at it. (A loop of such words, or a
			// third word, cost the VM more than they saved.)
			if i+25 > n {
				continue
			}
			l = 1 + bits.TrailingZeros64(notLower(load64(s, i+1)))>>3
			y = load64(s, i+l)
			if l < consonantRunLen && byte(y) == ' ' && uint8(byte(y>>8)|0x20-'a') < 26 {
				u += unit + int64(max(l-wordFreeLen, 0))*wordExtra
				i += l + 1
			}
			continue
		}
		p0 := int(wordPunct[byte(y)])
		next := isLetter(b1)&p0 | p0&is(b1, ' ')&isLetter(byte(y>>16))<<1
		if next == 0 {
			return j, u, true
		}
		u += int64(p0) * unit
		i = j + next
	}
	return i, u, false
}

// wordPunct is 1 for a punctuation byte that words' fast loop charges after
// a word, else 0: every clsPunct byte but the quote, the backslash and the
// control bytes, which a JSON string cannot hold as they are. words then
// returns before such a byte (scan charges it the same: a lone punctuation
// character is a token), so that words, run over a string's raw JSON text
// (walker.rawText), never passes the closing quote nor a byte the string
// must have escaped. Every other byte words passes over is a letter, a digit
// or a space.
var wordPunct = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		if byteClass[c] == clsPunct && c >= 0x20 && c != '"' && c != '\\' {
			t[c] = 1
		}
	}
	return t
}()

// load64 reads s[i:i+8] little-endian, without the bounds checks that
// cost the wasm VM more than the load: callers have checked i+8 <= len(s).
func load64(s []byte, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), i))[:])
}

// vowelBytes sets the top bit of each byte of x that is a vowel (y
// included) in either case. A byte is tested exactly when it and the
// bytes below it are ASCII: the sums below never carry out of such a byte.
func vowelBytes(x uint64) uint64 {
	y := x | lsb*0x20
	const k = msb - lsb
	return ^((y ^ lsb*'a' + k) & (y ^ lsb*'e' + k) & (y ^ lsb*'i' + k) &
		(y ^ lsb*'o' + k) & (y ^ lsb*'u' + k) & (y ^ lsb*'y' + k)) & msb
}

// isLetter is 1 for an ASCII letter, else 0.
func isLetter(c byte) int { return int((uint64(uint8(c|0x20-'a')) - 26) >> 63) }

// is is 1 when c == b, else 0.
func is(c, b byte) int { return int((uint64(c^b) - 1) >> 63) }

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// notLower sets the top bit of the first byte of x (the lowest) that is not
// 'a'..'z', and none when every byte is one; callers use only that byte
// (its index, or that there is none). Bytes below 'a' borrow in x-'a', bytes
// above 'z' carry into the top bit in x+5, bytes from 0x80 up have it set.
// A borrow or a carry crosses into the byte above only from a byte that is
// itself flagged, so flags above the first may be wrong, never the first.
func notLower(x uint64) uint64 {
	return ((x - lsb*'a') | (x + lsb*(0x80-'z'-1)) | x) & msb
}

// plusWordCost is u + wordCost(w), and plusPieceCost u plus the cost of a
// piece of lower-case letters (an optional capital first). They take u
// rather than words adding the cost: a value live across a call is kept on
// the stack by Go's wasm backend, and u would then be stored there on
// every turn of words' loop, not only before these calls.
//
//go:noinline
func plusWordCost(u int64, w []byte) int64 { return u + wordCost(w) }

//go:noinline
func plusPieceCost(u int64, p []byte) int64 { return u + pieceCost(p, 0, false) }
