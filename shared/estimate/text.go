package estimate

import "unsafe"

// Costs are summed in fixed point so fractional per-run charges add up over
// a fragment before the single round-up at the end.
const unit = 64

// Byte classes for the single pass in Text. Letters come first and digits
// right after them, so "is a letter" and "is a letter or digit" are each
// one comparison.
const (
	clsLower uint8 = iota
	clsUpper
	clsDigit
	clsSpace
	clsPunct
	clsHigh // first or continuation byte of a multi-byte UTF-8 sequence
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 'a' && c <= 'z':
			t[c] = clsLower
		case c >= 'A' && c <= 'Z':
			t[c] = clsUpper
		case c >= '0' && c <= '9':
			t[c] = clsDigit
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			t[c] = clsSpace
		case c >= 0x80:
			t[c] = clsHigh
		default:
			t[c] = clsPunct
		}
	}
	return t
}()

// Text estimates the tokens of one text fragment. It is the estimator's only
// source of counts, for prompt text and for streamed deltas alike.
//
// It mimics the pre-tokenizers of cl100k_base and o200k_base, whose pieces a
// BPE never merges across, and charges each piece conservatively:
//   - an ASCII word is split where o200k splits it (before an upper-case
//     letter that follows a lower-case one, and at digits); a piece costs one
//     token plus a share per letter beyond what common words reach, more for
//     pieces that look random (short mixed-case pieces, all capitals);
//   - digits cost one token per group of three, plus one for a single space
//     before them (neither tokenizer joins a space to a number);
//   - punctuation costs one token per character, except for repeated
//     characters and common code pairs, which both vocabularies hold whole;
//   - whitespace between words is free, longer runs cost one token per change
//     of character;
//   - a non-ASCII character costs by its UTF-8 length and script: a
//     three-byte one (CJK, kana, Hangul, symbols) what both tokenizers charge
//     it alone, from a table, and with a space before it what they charge the
//     pair; emoji three, two-byte scripts one.
//
// The result is never negative and never exceeds the fragment's byte length,
// the most tokens any byte-level BPE can produce, so it cannot overflow.
func Text(s []byte) int64 { return scan(s, 0, 0).any }

// TextString is Text for a string, so callers holding strings do not copy
// them. The bytes are viewed in place: scan only reads.
func TextString(s string) int64 {
	return scan(unsafe.Slice(unsafe.StringData(s), len(s)), 0, 0).any
}

// counts are a text's estimates: any is Text's, never below the count of
// cl100k_base or o200k_base; o200k never below o200k_base's alone. They
// differ only in what three-byte characters cost (CJK, kana, Hangul),
// where o200k_base's vocabulary is the larger.
type counts struct{ any, o200k int64 }

// textCounts is both estimates of s, in Text's one pass.
func textCounts(s []byte) counts { return scan(s, 0, 0) }

// scan is Text's single pass. It is written for Go's wasm backend, where the
// filter runs: a call costs tens of instructions (arguments travel through
// linear memory and every call site checks for stack unwinding) and a switch
// is a chain of comparisons, so letters are tested first and handed to
// words (one call per run of words, see words.go), a lone space or
// punctuation character is charged here without a call, and only the rarer
// shapes go to the per-run functions in runs.go and runes.go. A letter goes
// to asciiRun first, which charges the word and the ASCII text after it
// (asciiRunGo natively, hand-written wasm in the VM: see ascii_wasm.go).
//
// The pass starts at s[i] with u already charged, for a caller that charged
// the text before i itself (walker.rawText): i must be where the pass from 0
// would stand at the start of a turn, or where words would start a word,
// with that pass's u. Every other caller passes 0, 0.
func scan(s []byte, i int, u int64) counts {
	// u sums Text's charge; d what o200k_base alone charges less, for
	// the three-byte characters only. No value the loop keeps in a local
	// is live across a call (each call takes i and u and returns them):
	// Go's wasm backend stores such a value to the stack on every turn.
	// d is used by the rare three-byte paths only, so it stays in memory.
	var d int64
	n := len(s)
	for i < n {
		c := s[i]
		cls := byteClass[c]
		if cls <= clsUpper {
			// asciiRun charges the word and the ASCII text after it, up
			// to a piece it leaves to this loop; a word it leaves goes
			// to words.
			if j, v := asciiRun(s, i, u, &asciiTab); j != i {
				i, u = j, v
				continue
			}
			i, u = words(s, i, u)
			continue
		}
		switch cls {
		case clsSpace:
			if i+1 == n {
				// Alone at the end, a space or a newline is a token.
				u += unit
				i++
				continue
			}
			if byteClass[s[i+1]] != clsSpace {
				if c == '\n' || c == '\r' {
					// A newline is a token of its own.
					u += unit
					i++
					continue
				}
				// A lone space or tab between words rides on the next piece,
				// unless that piece starts with a CJK or Hangul character.
				if s[i+1] >= 0xE0 {
					i, u = spacedRuneAt(s, i, u, &d)
					continue
				}
				i++
				continue
			}
			i, u = spaceRun(s, i, u)
		case clsPunct:
			if i+1 == n || byteClass[s[i+1]] != clsPunct {
				// A lone punctuation character is one token.
				u += unit
				i++
				continue
			}
			if i+2 == n || byteClass[s[i+2]] != clsPunct {
				// Two, the common shape in code ("()", ":=", "++"): one
				// token, less for a repeat or a common pair, as punctCost
				// charges them, without its call and loop.
				u += punctPairCost(c, s[i+1])
				i += 2
				continue
			}
			i, u = punctRun(s, i, u)
		case clsDigit:
			i, u = digitRun(s, i, u)
		default:
			i, u = runeAt(s, i, u, &d)
		}
	}
	// Byte-level BPE never needs more tokens than bytes.
	return counts{min((u+unit-1)/unit, int64(n)), min((u-d+unit-1)/unit, int64(n))}
}

// spaceRun charges the run of two or more whitespace bytes at s[i],
// newlines or not: a token, one more per change of character, and a share
// per byte beyond spaceFreeLen (indentation is held whole up to there). It
// returns where the run ends and u plus its cost.
func spaceRun(s []byte, i int, u int64) (int, int64) {
	j := i + 2
	changes := int64(is(s[i+1], s[i]) ^ 1)
	for j < len(s) && byteClass[s[j]] == clsSpace {
		changes += int64(is(s[j], s[j-1]) ^ 1)
		j++
	}
	return j, u + unit + changes*unit + int64(max(j-i-spaceFreeLen, 0))*spacePerChar
}

// digitRun charges the run of digits at s[i], a token per group of three
// begun and one for a whitespace byte before them (neither tokenizer joins
// it to a number), and returns where the run ends and u plus its cost.
func digitRun(s []byte, i int, u int64) (int, int64) {
	j := i
	for j < len(s) && byteClass[s[j]] == clsDigit {
		j++
	}
	u += int64((j-i+2)/3) * unit
	if i > 0 && byteClass[s[i-1]] == clsSpace {
		u += unit
	}
	return j, u
}

// punctPairCost is what punctCost charges the two punctuation characters
// c and b, the common shape in code ("()", ":=", "++"), without its loop:
// one token, less for a repeat or a common pair.
func punctPairCost(c, b byte) int64 {
	rep := int64(is(c, b))
	pair := int64(pairBits[c] >> punctIndex[b] & 1)
	return unit + rep*repeatExtra + (1-rep)*(1-pair)*unit
}

// punctRun charges the run of two or more punctuation characters at s[i]
// and returns where it ends and u plus its cost.
func punctRun(s []byte, i int, u int64) (int, int64) {
	j := i + 2
	for j < len(s) && byteClass[s[j]] == clsPunct {
		j++
	}
	return j, u + punctCost(s[i:j])
}

// runeAt charges the non-ASCII character at s[i] (see runeCost) and
// returns where it ends and u plus its cost; d gains what o200k_base
// alone charges less.
func runeAt(s []byte, i int, u int64, d *int64) (int, int64) {
	size, cost, less := runeCost(s, i)
	*d += less
	return i + size, u + cost
}

// spacedRuneAt charges the lone space or tab at s[i] with the three-byte
// character after it (see spacedRuneCost), or, when none follows, the
// space alone, free as before other letters.
func spacedRuneAt(s []byte, i int, u int64, d *int64) (int, int64) {
	size, cost, less := spacedRuneCost(s, i+1, s[i] == ' ')
	if size == 0 {
		return i + 1, u
	}
	*d += less
	return i + 1 + size, u + cost
}
