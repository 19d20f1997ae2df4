package wire

import (
	"strconv"
	"unsafe"
)

// parseFloat reads a JSON number as strconv.ParseFloat reads it, false
// where ParseFloat reports an error (out of float64's range). A number whose
// digits, point removed, fit in 2^53 and whose power of ten is at most 22
// either way is one multiplication or division of two float64s that hold
// their values exactly, which IEEE 754 rounds correctly, so it is computed
// here: ParseFloat spent some 500 instructions on each refill rate of a
// plan, and the service reads a dozen per admission. Every other number
// goes to ParseFloat.
func parseFloat(b []byte) (float64, bool) {
	if f, ok := exactFloat(b); ok {
		return f, true
	}
	if len(b) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	return f, err == nil
}

// exactFloat is parseFloat's exact case; ok is false for any other input.
func exactFloat(b []byte) (f float64, ok bool) {
	i := 0
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		i++
	}
	var m uint64 // the digits, while they number at most 19
	nd, frac := 0, 0
	for ; i < len(b) && b[i]-'0' < 10; i++ {
		m = m*10 + uint64(b[i]-'0')
		nd++
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && b[i]-'0' < 10; i++ {
			m = m*10 + uint64(b[i]-'0')
			nd++
			frac++
		}
	}
	exp := 0
	if i < len(b) && b[i]|0x20 == 'e' {
		i++
		eneg := i < len(b) && b[i] == '-'
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for ; i < len(b) && b[i]-'0' < 10 && i-start < 3; i++ {
			exp = exp*10 + int(b[i]-'0')
		}
		if i == start {
			return 0, false
		}
		if eneg {
			exp = -exp
		}
	}
	e := exp - frac
	if i != len(b) || nd == 0 || nd > 19 || m > 1<<53 || e < -22 || e > 22 {
		return 0, false
	}
	if e >= 0 {
		f = float64(m) * exactPow10[e]
	} else {
		f = float64(m) / exactPow10[-e]
	}
	if neg {
		f = -f
	}
	return f, true
}

// exactPow10 holds the powers of ten that float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}
