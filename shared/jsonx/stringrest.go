package jsonx

import (
	"slices"
	"unicode/utf8"
)

// PlainEnd is the index of the first byte of d from i that a string
// literal cannot hold as it is (a quote, a backslash or a control byte), or
// len(d) when there is none or i is outside d. For a caller reading a
// literal's content at i, it is where the content ends if it holds no
// escape (d[PlainEnd] is then the closing quote), or its first escape (and
// AppendStringRest decodes the rest from there).
func PlainEnd(d []byte, i int) int {
	if i < 0 || i >= len(d) {
		return max(i, len(d))
	}
	return plainEnd(d, i)
}

// AppendStringRest validates the string literal of d whose content goes on
// at d[i] and appends the decoding of that content, from i to the closing
// quote, to dst. As for StringEnd, the caller has read the content before i
// itself and found it plain (no quote, backslash or control byte), and i is
// not the literal's opening quote. Escapes decode as AppendUnescaped decodes
// them with KeepInvalidUTF8, and every other byte is copied as it is. It
// returns dst, the index after the closing quote, and ok; when ok is false
// the literal is not a valid string, end is where it fails (as StringEnd's)
// and dst holds what was decoded before that.
//
// It reads the content once, where StringEnd and then AppendUnescaped read
// it twice: for a caller that meets an escape where its own reading of the
// text stopped (the estimator, in code), validating is decoding.
func AppendStringRest(dst, d []byte, i int) (out []byte, end int, ok bool) {
	if i < 1 || i > len(d) {
		return dst, i, false
	}
	for i < len(d) {
		if cap(dst)-len(dst) < 16 {
			dst = slices.Grow(dst, 64) // at least doubling, as append does
		}
		var n int
		i, n = unescapeRun(d, i, dst[:cap(dst)], len(dst))
		dst = dst[:n]
		if i >= len(d) {
			break
		}
		switch c := d[i]; {
		case c == '"':
			return dst, i + 1, true
		case c < 0x20:
			return dst, i, false
		case c == '\\':
			// What unescapeRun leaves: a surrogate, an escape cut short or
			// not one, or one without room for its rune.
			if escapeLen(d, i) == 0 {
				return dst, i, false
			}
			r, size := decodeRune(d, i)
			dst = utf8.AppendRune(dst, r)
			i += size
		}
		// Any other byte: unescapeRun ran out of room before it.
	}
	return dst, i, false
}
