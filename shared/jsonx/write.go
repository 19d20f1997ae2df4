package jsonx

import (
	"math/bits"
	"slices"
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
//
// A string that needs no escape (a name, a hash, most values) is written
// in one copy; in the VM the escaper's frame alone cost more than that.
func AppendString(dst []byte, s string) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if x := loadString64(s, i); x&msb|stringStops(x) != 0 {
			return AppendStringWith(dst, s, 0)
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || !plain[0][c] {
			return AppendStringWith(dst, s, 0)
		}
	}
	n := len(dst)
	dst = slices.Grow(dst, len(s)+2)[:n+len(s)+2]
	dst[n] = '"'
	copy(dst[n+1:], s)
	dst[n+1+len(s)] = '"'
	return dst
}

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

// AppendInt appends n in decimal, as strconv.AppendInt(dst, n, 10) does: a
// JSON number, or a header's value.
//
// It is one function with two digits a step, eight digits a turn written in
// line: in the VM strconv's chain of calls cost about 1,950 instructions
// for a 13-digit value (a token capacity), which a response writes several
// of, while each step and each turn of a loop goes back through the
// function's dispatch.
func AppendInt(dst []byte, n int64) []byte {
	u := uint64(n)
	w := 0
	if n < 0 {
		u = -u // -MinInt64 is 1<<63 as a uint64
		w = 1
	}
	// The digits are written in place, from the last: no array to zero and
	// no copy of it (each a call into the host in the VM).
	w += decimalDigits(u)
	l := len(dst)
	if cap(dst)-l < w {
		dst = append(dst, make([]byte, w)...)
	}
	dst = dst[:l+w]
	b := dst[l:]
	i := w
	for u >= 1e8 {
		q := u / 1e8
		lo := uint32(u - q*1e8)
		u = q
		// Eight digits of lo, two a step, all in 32 bits.
		p0, p1, p2, p3 := lo%100, lo/100%100, lo/1e4%100, lo/1e6
		i -= 8
		d := b[i : i+8 : i+8]
		d[6], d[7] = digitPairs[2*p0], digitPairs[2*p0+1]
		d[4], d[5] = digitPairs[2*p1], digitPairs[2*p1+1]
		d[2], d[3] = digitPairs[2*p2], digitPairs[2*p2+1]
		d[0], d[1] = digitPairs[2*p3], digitPairs[2*p3+1]
	}
	lo := uint32(u)
	for lo >= 100 {
		p := lo % 100
		lo /= 100
		i -= 2
		b[i], b[i+1] = digitPairs[2*p], digitPairs[2*p+1]
	}
	if lo >= 10 {
		i -= 2
		b[i], b[i+1] = digitPairs[2*lo], digitPairs[2*lo+1]
	} else {
		i--
		b[i] = byte('0' + lo)
	}
	if n < 0 {
		b[0] = '-'
	}
	return dst
}

// decimalDigits is how many digits u has in decimal (1 for 0).
func decimalDigits(u uint64) int {
	// bits.Len64 scaled by log10(2) (1233/4096) is the count or one less.
	t := (bits.Len64(u) * 1233) >> 12
	if t < len(powersOf10) && u >= powersOf10[t] {
		t++
	}
	return max(t, 1)
}

// powersOf10 holds 10^0 to 10^19.
var powersOf10 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// digitPairs holds "00" to "99", two bytes each.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"
