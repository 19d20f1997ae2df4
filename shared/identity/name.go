package identity

import "unicode/utf8"

// firstBytesDiffer reports two names whose first bytes are both ASCII and
// differ other than in case, which strings.EqualFold (the header names'
// comparison) would find unequal at its first rune: case folding relates an
// ASCII letter only to its other case among ASCII runes (K's Kelvin sign and
// s's long s are not ASCII). Anything else is false, left to EqualFold.
//
// A request's header names are looked up one configured name at a time and
// nearly every pair differs at its first byte; in the VM a call to EqualFold
// costs a hundred instructions or more where this test, in line, costs a few.
func firstBytesDiffer(a, b string) bool {
	return len(a) > 0 && len(b) > 0 && a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf && a[0]|caseBit(a[0]) != b[0]|caseBit(b[0])
}

// caseBit is the bit that turns an upper-case ASCII letter into its lower
// case, and 0 for any other byte.
func caseBit(c byte) byte {
	if c-'A' < 26 {
		return 0x20
	}
	return 0
}
