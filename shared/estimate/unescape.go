package estimate

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// The walk measures strings over the body's own bytes. jsonx can decode a
// string only into a new slice (StrBytes), one allocation per escaped
// string, and escapes ("\n", "\"") are in most real prompts; so escaped
// strings are decoded here into a buffer the walk reuses.

// stringContent returns the bytes between a String value's quotes (nil for
// other kinds).
func stringContent(v jsonx.Value) []byte {
	if v.Kind != jsonx.String || len(v.Raw) < 2 {
		return nil
	}
	return v.Raw[1 : len(v.Raw)-1]
}

// appendUnescaped appends the decoding of validated string content c to
// dst. Escapes decode as encoding/json (and jsonx) decode them, an unpaired
// surrogate becoming U+FFFD; every other byte is copied as it is, so
// invalid UTF-8 keeps costing one token per byte, as it does in strings
// without escapes. Malformed escapes (impossible after validation) are
// copied rather than trusted.
func appendUnescaped(dst, c []byte) []byte {
	for i := 0; i < len(c); {
		j := bytes.IndexByte(c[i:], '\\')
		if j < 0 {
			return append(dst, c[i:]...)
		}
		dst = append(dst, c[i:i+j]...)
		i += j
		if i+1 >= len(c) {
			return append(dst, c[i:]...)
		}
		switch e := c[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(c, i+2)
			if !ok {
				dst = append(dst, c[i:i+2]...)
				break
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, ok := hex4(c, i+2)
				if dec := utf16.DecodeRune(r, r2); ok && i+1 < len(c) && c[i] == '\\' && c[i+1] == 'u' && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			dst = append(dst, c[i:i+2]...)
		}
		i += 2
	}
	return dst
}

// hex4 reads the four hex digits at c[i:].
func hex4(c []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(c) {
		return 0, false
	}
	var r rune
	for _, h := range c[i : i+4] {
		switch {
		case h >= '0' && h <= '9':
			h -= '0'
		case h >= 'a' && h <= 'f':
			h -= 'a' - 10
		case h >= 'A' && h <= 'F':
			h -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}
