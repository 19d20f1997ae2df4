package estimate

// runeCost charges the non-ASCII character starting at s[i] and returns its
// length in bytes (at least 1, so the scan always advances) and how much
// less o200k_base alone charges it. Byte-level BPE never needs more tokens
// than bytes, so no charge exceeds the byte length; an invalid or truncated
// sequence costs one token per byte.
func runeCost(s []byte, i int) (size int, cost, less int64) {
	n := len(s)
	c := s[i]
	switch {
	case c >= 0xC2 && c <= 0xDF:
		if i+1 < n && isCont(s[i+1]) {
			return 2, costTwoByte, 0
		}
	case c >= 0xE0 && c <= 0xEF:
		if i+2 < n && isCont(s[i+1]) && isCont(s[i+2]) {
			r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			cost, less := threeByteCost(r)
			return 3, cost, less
		}
	case c >= 0xF0 && c <= 0xF4:
		if i+3 < n && isCont(s[i+1]) && isCont(s[i+2]) && isCont(s[i+3]) {
			return 4, costFourByte, 0
		}
	}
	return 1, unit, 0
}

func isCont(b byte) bool { return b&0xC0 == 0x80 }

const (
	// Latin accents, Greek, Cyrillic, Hebrew, Arabic: at most one token
	// per letter in both vocabularies for running text.
	costTwoByte = unit
	// Emoji and supplementary-plane characters: two or three tokens each
	// in cl100k_base, fewer in o200k_base.
	costFourByte = 3 * unit
)

// The code points threeByteTable covers: every three-byte UTF-8 sequence.
const (
	threeByteFirst = 0x0800
	threeByteLast  = 0xFFFF
)

// threeByteCost charges a CJK ideograph, kana, Hangul syllable, symbol or
// typographic mark what the tokenizers in use charge it alone, from the
// tables: a common one is a single token in both cl100k_base and
// o200k_base, a rare one up to three (one per byte) in cl100k_base; less is
// what o200k_base alone charges less. Within a word the vocabularies merge
// characters further, never splitting them more.
func threeByteCost(r rune) (cost, less int64) {
	i := uint(r - threeByteFirst)
	if i >= uint(len(threeByteTable))*4 {
		return 3 * unit, 0
	}
	shift := (i & 3) * 2
	cost = int64(threeByteTable[i>>2]>>shift&3) * unit
	return cost, cost - int64(o200kThreeByteTable[i>>2]>>shift&3)*unit
}

// spacedRuneCost charges a lone space or tab and the three-byte character
// after it, at s[i], as one piece: cl100k_base and o200k_base join a space
// to the letters after it, and where their vocabulary has no such pair the
// space is a token of its own. size is 0 when s[i] starts no valid
// three-byte sequence, and the space is then free as before other letters.
func spacedRuneCost(s []byte, i int, space bool) (size int, cost, less int64) {
	n := len(s)
	c := s[i]
	if c < 0xE0 || c > 0xEF || i+2 >= n || !isCont(s[i+1]) || !isCont(s[i+2]) {
		return 0, 0, 0
	}
	r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
	if !space {
		cost, less = threeByteCost(r)
		return 3, unit + cost, less
	}
	j := uint(r - threeByteFirst)
	if j >= uint(len(spacedThreeByteTable))*4 {
		return 3, 4 * unit, 0
	}
	shift := (j & 3) * 2
	cost = int64(spacedThreeByteTable[j>>2]>>shift&3+1) * unit
	return 3, cost, cost - int64(o200kSpacedThreeByteTable[j>>2]>>shift&3+1)*unit
}
