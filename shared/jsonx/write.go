package jsonx

import (
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// StringOptions add escapes to the ones every JSON string gets, for writers
// whose output must match an existing spelling byte for byte.
type StringOptions uint8

const (
	// LikeMarshal spells a string as encoding/json's Marshal does: <, > and
	// & as \u003c, \u003e and \u0026, and \b and \f in their short forms.
	LikeMarshal StringOptions = 1 << iota
	// EscapeDEL writes 0x7f as \u007f, so a body shown in a terminal or a
	// log carries no control character at all.
	EscapeDEL
)

// plain[o&3][c] is true for an ASCII byte written as it is under options o.
var plain = func() (t [4][utf8.RuneSelf]bool) {
	for o := range t {
		for c := 0x20; c < utf8.RuneSelf; c++ {
			t[o][c] = c != '"' && c != '\\' &&
				!(StringOptions(o)&LikeMarshal != 0 && (c == '<' || c == '>' || c == '&')) &&
				!(StringOptions(o)&EscapeDEL != 0 && c == 0x7f)
		}
	}
	return t
}()

// AppendString appends s as a JSON string literal. The output is always valid
// JSON whatever s holds: quotes, backslashes and control bytes are escaped, and
// invalid UTF-8 becomes \ufffd (as encoding/json does) instead of producing a
// body the upstream would reject. U+2028/U+2029 are escaped too so the output
// is also safe inside JavaScript.
func AppendString(dst []byte, s string) []byte { return AppendStringWith(dst, s, 0) }

// AppendStrings appends ss as a JSON array of strings.
func AppendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, s)
	}
	return append(dst, ']')
}

// Quote is s as a JSON string, for names shown in errors.
func Quote(s string) string { return string(AppendString(nil, s)) }

// AppendStringWith is AppendString with the extra escapes of o.
func AppendStringWith(dst []byte, s string, o StringOptions) []byte {
	safe := &plain[o&3]
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			// Eight bytes written as they are: one test, not eight. The
			// test without extra escapes is in line (plainWord is too
			// large to be, and a call per word cost the VM more than the
			// test).
			if x := loadString64(s, i); x&msb|stringStops(x) == 0 && (o == 0 || plainWord(x, o)) {
				i += 8
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\b' && o&LikeMarshal != 0:
				dst = append(dst, '\\', 'b')
			case c == '\f' && o&LikeMarshal != 0:
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += n
			start = i
			continue
		}
		i += n
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendInt appends n as a JSON number; it exists so callers need only this
// package to write JSON.
func AppendInt(dst []byte, n int64) []byte {
	return strconv.AppendInt(dst, n, 10)
}
