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
	// CJK ideographs, kana, Hangul and other three-byte letters: common
	// ones are one token, rare ones up to three in cl100k_base.
	costThreeByte = 2 * unit
	// Typographic punctuation (dashes, curly quotes, bullets, ellipsis)
	// and CJK punctuation, frequent enough to be single tokens.
	costThreeBytePunct = unit
	// Emoji and supplementary-plane characters: two or three tokens each
	// in cl100k_base, fewer in o200k_base.
	costFourByte = 3 * unit
)

func threeByteCost(r rune) int64 {
	switch {
	case r >= 0x2010 && r <= 0x2027:
		return costThreeBytePunct
	}
	return costThreeByte
}
