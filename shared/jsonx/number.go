package jsonx

import (
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
	return parseIntegral(s)
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

// parseIntegral evaluates a validated JSON number exactly when it is an
// integer in int64 range.
func parseIntegral(s []byte) (int64, bool) {
	i := 0
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
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
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			if exp < 1<<20 { // beyond this every non-zero value is out of range or fractional
				exp = exp*10 + int(s[i]-'0')
			}
		}
		if eneg {
			exp = -exp
		}
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
		return 0, true // any spelling of zero, including -0
	}
	hi := nd
	e := exp - len(frac)
	for digit(hi-1) == '0' {
		hi--
		e++
	}
	if e < 0 {
		return 0, false // the last non-zero digit is after the point
	}
	if hi-lo+e > 19 {
		return 0, false // at least 10^19 > MaxInt64
	}
	var u uint64
	for k := lo; k < hi; k++ {
		u = u*10 + uint64(digit(k)-'0')
	}
	for ; e > 0; e-- {
		u *= 10
	}
	// hi-lo+e <= 19 digits fit in uint64 (< 10^19 < 2^64).
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}
