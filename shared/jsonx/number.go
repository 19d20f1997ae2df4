package jsonx

import (
	"math"
	"strconv"
	"unsafe"
)

// numberText returns the bytes of a JSON number held by v: a Number, or a
// String whose content is exactly a JSON number (no trimming, no hex, no
// "inf") — config files and some clients quote numbers like "32000".
func (v Value) numberText() ([]byte, bool) {
	var s []byte
	switch v.Kind {
	case Number:
		s = v.Raw
	case String:
		c, ok := v.content()
		if !ok {
			return nil, false
		}
		s = c
	default:
		return nil, false
	}
	if !isNumber(s) {
		return nil, false
	}
	return s, true
}

// Float returns the value of a Number, or of a String holding exactly a JSON
// number. False for other kinds and for magnitudes beyond float64 (so a budget
// can never silently become +Inf).
func (v Value) Float() (float64, bool) {
	s, ok := v.numberText()
	if !ok {
		return 0, false
	}
	// strconv does not retain s, so reading the document in place is safe.
	f, err := strconv.ParseFloat(unsafe.String(&s[0], len(s)), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// Int returns the value of a Number (or numeric String) when it is exactly an
// integer that fits int64: 32000, 32000.0, 3.2e4 and "32000" all give 32000.
// Fractions (even 1e-400 or 1.0000000000000000001) and out-of-range values give
// false; the check is done on the decimal digits, not through float64, so it
// is exact.
func (v Value) Int() (int64, bool) {
	s, ok := v.numberText()
	if !ok {
		return 0, false
	}
	n, ok := ParseInteger(s)
	if !ok || n.Fraction || n.Overflow {
		return 0, false
	}
	return n.Value, true
}

// Bool returns the value of JSON true/false. Strings such as "true" are NOT
// accepted: a quoted boolean in config is more likely a mistake than intent.
func (v Value) Bool() (bool, bool) {
	switch v.Kind {
	case True:
		return true, true
	case False:
		return false, true
	}
	return false, false
}

// Integer is a decimal number read exactly as an integer. Callers apply
// their own policy to it: only whole numbers (Int), round a fraction up
// (an output ceiling), clamp a large count.
type Integer struct {
	// Value is the number rounded toward zero; when Overflow, the int64
	// bound of its sign.
	Value int64
	// Fraction reports a non-zero fractional part, cut off from Value.
	Fraction bool
	// Overflow reports a magnitude beyond int64.
	Overflow bool
	// Negative reports a number below zero, so a caller can tell -0.5
	// (Value 0, Fraction) from 0.5; -0 is not below zero.
	Negative bool
}

// ParseInteger reads decimal number text exactly, on its digits rather than
// through float64: an optional sign, digits with an optional point (digits
// on at least one side, as strconv.ParseFloat takes them), and an optional
// exponent. Every JSON number is such text; so are "+5", "007" and "5.",
// which a caller that wants JSON's grammar refuses first. False for
// anything else (hex, "Inf", underscores, spaces, empty).
func ParseInteger(s []byte) (Integer, bool) {
	if n, ok := plainDigits(s); ok {
		return n, true
	}
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	i = skipDigits(s, i)
	intPart := s[intStart:i]
	var frac []byte
	if i < len(s) && s[i] == '.' {
		fs := i + 1
		i = skipDigits(s, fs)
		frac = s[fs:i]
	}
	if len(intPart)+len(frac) == 0 {
		return Integer{}, false
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			// Past 2^40 no document holds enough digits to bring the
			// value back into range or to a whole number.
			if exp < 1<<40 {
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if i == es {
			return Integer{}, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return Integer{}, false
	}
	// Digits D = intPart+frac, value = D * 10^(exp-len(frac)).
	nd := len(intPart) + len(frac)
	digit := func(k int) byte {
		if k < len(intPart) {
			return intPart[k]
		}
		return frac[k-len(intPart)]
	}
	lo := 0
	for lo < nd && digit(lo) == '0' {
		lo++
	}
	if lo == nd {
		return Integer{}, true // any spelling of zero, including -0
	}
	hi := nd
	e := exp - len(frac)
	for digit(hi-1) == '0' {
		hi--
		e++
	}
	out := Integer{Negative: neg}
	if e < 0 {
		// The last non-zero digit is after the point: the digits from
		// hi+e on are the fraction.
		out.Fraction = true
		hi += e
		e = 0
	}
	if hi-lo+e > 19 {
		out.Overflow = true // at least 10^19 > MaxInt64
	}
	var u uint64
	if !out.Overflow {
		for k := lo; k < hi; k++ {
			u = u*10 + uint64(digit(k)-'0')
		}
		for ; e > 0; e-- {
			u *= 10
		}
		// hi-lo+e <= 19 digits fit in uint64 (< 10^19 < 2^64).
		out.Overflow = neg && u > 1<<63 || !neg && u > 1<<63-1
	}
	switch {
	case out.Overflow && neg:
		out.Value = math.MinInt64
	case out.Overflow:
		out.Value = math.MaxInt64
	case neg:
		out.Value = -int64(u)
	default:
		out.Value = int64(u)
	}
	return out, true
}

// PlainInteger reads s when it is an optional minus and up to 18 digits,
// which always fit an int64, and reports false for anything else: a caller
// whose own rule refuses a point or an exponent (wire's integers) takes
// the common case here before searching the number for them.
func PlainInteger(s []byte) (int64, bool) {
	n, ok := plainDigits(s)
	return n.Value, ok
}

// plainDigits reads an optional minus and up to 18 digits at once, which
// always fit an int64: every capacity, amount and count a decoder meets
// takes this path instead of ParseInteger's exact general one.
func plainDigits(s []byte) (Integer, bool) {
	d := s
	neg := len(d) > 0 && d[0] == '-'
	if neg {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		return Integer{}, false
	}
	n := int64(0)
	for _, c := range d {
		if c < '0' || c > '9' {
			return Integer{}, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return Integer{Value: n, Negative: n < 0}, true
}
