package jsonx

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Decoding follows encoding/json exactly, so that a string read here means the
// same as it does to an upstream written in Go: invalid UTF-8 bytes and
// unpaired surrogates each become U+FFFD.

// content returns the bytes between the quotes of a String value.
func (v Value) content() ([]byte, bool) {
	if v.Kind != String || len(v.Raw) < 2 {
		return nil, false
	}
	return v.Raw[1 : len(v.Raw)-1], true
}

// Str returns the decoded content of a String ("" for any other kind). It
// allocates; use StrBytes or StrLen on hot paths.
func (v Value) Str() string {
	c, ok := v.content()
	if !ok {
		return ""
	}
	if !needsDecoding(c) {
		return string(c)
	}
	b := appendDecoded(make([]byte, 0, len(c)), c)
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// StrBytes returns the decoded content of a String without allocating when no
// decoding is needed: the result then aliases Raw and must not be modified.
// Otherwise it is a new slice. Nil for other kinds.
func (v Value) StrBytes() []byte {
	c, ok := v.content()
	if !ok {
		return nil
	}
	if !needsDecoding(c) {
		return c[:len(c):len(c)]
	}
	return appendDecoded(make([]byte, 0, len(c)), c)
}

// StrLen returns len(v.Str()) without allocating, which is what the token
// estimator needs for every message in a request.
func (v Value) StrLen() int {
	c, ok := v.content()
	if !ok {
		return 0
	}
	return decodedLen(c)
}

// Unquote decodes one complete JSON string literal (quotes included), e.g. a
// raw key from ForEach wrapped back in quotes, or a Raw of Kind String. It
// validates first, so it is safe on arbitrary bytes.
func Unquote(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	end, ok := validString(raw, 0)
	if !ok || end != len(raw) {
		return "", false
	}
	return Value{Kind: String, Raw: raw}.Str(), true
}

// decodeRune decodes the unit of string content at s[i] (a byte, a UTF-8
// sequence or an escape) and returns the rune and the bytes consumed (>= 1).
func decodeRune(s []byte, i int) (rune, int) {
	c := s[i]
	if c != '\\' {
		if c < utf8.RuneSelf {
			return rune(c), 1
		}
		return utf8.DecodeRune(s[i:])
	}
	if i+1 >= len(s) {
		return utf8.RuneError, 1
	}
	switch s[i+1] {
	case '"', '\\', '/':
		return rune(s[i+1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		r, ok := hex4(s, i+2)
		if !ok {
			return utf8.RuneError, 2
		}
		if utf16.IsSurrogate(r) {
			if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if r2, ok := hex4(s, i+8); ok {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						return dec, 12
					}
				}
			}
			return utf8.RuneError, 6
		}
		return r, 6
	}
	return utf8.RuneError, 2
}

// Content returns the bytes between a String's quotes, undecoded (nil for
// other kinds): with AppendUnescaped, a caller decodes into a buffer it
// reuses instead of a new slice per string.
func (v Value) Content() []byte {
	c, _ := v.content()
	return c
}

// UnescapeOptions change what AppendUnescaped does with bytes that are not
// escapes.
type UnescapeOptions uint8

const (
	// KeepInvalidUTF8 copies invalid UTF-8 outside escapes as it is instead
	// of writing U+FFFD for each byte, for a caller that measures the bytes
	// a client sent (the token estimator counts each as a token).
	KeepInvalidUTF8 UnescapeOptions = 1 << iota
)

// AppendUnescaped appends the decoding of validated string content c (the
// bytes between the quotes; see Content) to dst. Escapes decode as
// encoding/json decodes them, an unpaired surrogate becoming U+FFFD, and so
// does each invalid UTF-8 byte unless o has KeepInvalidUTF8.
func AppendUnescaped(dst, c []byte, o UnescapeOptions) []byte {
	if o&KeepInvalidUTF8 != 0 {
		return appendEscapesDecoded(dst, c)
	}
	return appendDecoded(dst, c)
}

// appendEscapesDecoded decodes the escapes of c and copies every other byte.
// While dst has room beyond its length that is not c, unescapeRun decodes
// it eight bytes a turn, each escape on the spot (in code and formatted text
// escapes come every few bytes, and in the wasm VM a call per piece cost
// more than the copy), and what it leaves (a surrogate, an escape cut short)
// is decoded here. The rest, and a dst with no such room, take one search
// and one copy per escape.
func appendEscapesDecoded(dst, c []byte) []byte {
	i := 0
	if room := dst[len(dst):cap(dst)]; len(room) >= 8 && !overlap(room, c) {
		d, n := dst[:cap(dst)], len(dst)
		for i < len(c) {
			if i, n = unescapeRun(c, i, d, n); i >= len(c) || n+utf8.UTFMax > len(d) {
				break // the loop below ends it
			}
			r, size := decodeRune(c, i)
			i, n = i+size, n+utf8.EncodeRune(d[n:], r)
		}
		dst = d[:n]
	}
	for i < len(c) {
		j := bytes.IndexByte(c[i:], '\\')
		if j < 0 {
			return append(dst, c[i:]...)
		}
		dst = append(dst, c[i:i+j]...)
		i += j
		r, n := decodeRune(c, i)
		dst = utf8.AppendRune(dst, r)
		i += n
	}
	return dst
}

// overlap reports whether a (not empty) and b share memory.
func overlap(a, b []byte) bool {
	if len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+uintptr(len(b)) && b0 < a0+uintptr(len(a))
}

// shortEscapes maps the letter after a backslash to what the escape
// stands for, for every escape but \u (0: not one of them).
var shortEscapes = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// appendDecoded appends the decoding of string content c to dst.
func appendDecoded(dst, c []byte) []byte {
	start := 0
	for i := 0; i < len(c); {
		if b := c[i]; b < utf8.RuneSelf && b != '\\' {
			i++
			continue
		}
		dst = append(dst, c[start:i]...)
		r, n := decodeRune(c, i)
		if r < utf8.RuneSelf {
			dst = append(dst, byte(r))
		} else {
			dst = utf8.AppendRune(dst, r)
		}
		i += n
		start = i
	}
	return append(dst, c[start:]...)
}

// decodedLen is len(appendDecoded(nil, c)) without the allocation.
func decodedLen(c []byte) int {
	n := 0
	for i := 0; i < len(c); {
		for i+8 <= len(c) && plainTextWord(load64(c, i)) {
			i += 8
			n += 8
		}
		if i >= len(c) {
			break
		}
		if b := c[i]; b < utf8.RuneSelf && b != '\\' {
			i++
			n++
			continue
		}
		r, size := decodeRune(c, i)
		i += size
		if w := utf8.RuneLen(r); w > 0 {
			n += w
		} else {
			n += 3 // utf8.AppendRune writes U+FFFD
		}
	}
	return n
}
