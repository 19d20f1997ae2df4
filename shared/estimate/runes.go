package estimate

// runeCost charges the non-ASCII character starting at s[i] and returns its
// length in bytes (at least 1, so the scan always advances). Byte-level BPE
// never needs more tokens than bytes, so no charge exceeds the byte length;
// an invalid or truncated sequence costs one token per byte.
func runeCost(s []byte, i int) (size int, cost int64) {
	n := len(s)
	c := s[i]
	switch {
	case c >= 0xC2 && c <= 0xDF:
		if i+1 < n && isCont(s[i+1]) {
			return 2, costTwoByte
		}
	case c >= 0xE0 && c <= 0xEF:
		if i+2 < n && isCont(s[i+1]) && isCont(s[i+2]) {
			r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			return 3, threeByteCost(r)
		}
	case c >= 0xF0 && c <= 0xF4:
		if i+3 < n && isCont(s[i+1]) && isCont(s[i+2]) && isCont(s[i+3]) {
			return 4, costFourByte
		}
	}
	return 1, unit
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
// table: a common one is a single token in both cl100k_base and o200k_base,
// a rare one up to three (one per byte) in cl100k_base. Within a word the
// vocabularies merge characters further, never splitting them more.
func threeByteCost(r rune) int64 {
	i := uint(r - threeByteFirst)
	if i >= uint(len(threeByteTable))*4 {
		return 3 * unit
	}
	return int64(threeByteTable[i>>2]>>((i&3)*2)&3) * unit
}

// spacedRuneCost charges a lone space or tab and the three-byte character
// after it, at s[i], as one piece: cl100k_base and o200k_base join a space
// to the letters after it, and where their vocabulary has no such pair the
// space is a token of its own. size is 0 when s[i] starts no valid
// three-byte sequence, and the space is then free as before other letters.
func spacedRuneCost(s []byte, i int, space bool) (size int, cost int64) {
	n := len(s)
	c := s[i]
	if c < 0xE0 || c > 0xEF || i+2 >= n || !isCont(s[i+1]) || !isCont(s[i+2]) {
		return 0, 0
	}
	r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
	if !space {
		return 3, unit + threeByteCost(r)
	}
	j := uint(r - threeByteFirst)
	if j >= uint(len(spacedThreeByteTable))*4 {
		return 3, 4 * unit
	}
	return 3, int64(spacedThreeByteTable[j>>2]>>((j&3)*2)&3+1) * unit
}
