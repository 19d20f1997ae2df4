package money

import (
	"errors"
	"math"
)

// Amount is a sum of money in nano-USD (1 USD = 1e9).
type Amount int64

// Price is USD per million tokens, in nano-USD per million tokens.
type Price int64

// Max is the largest Amount (and Price).
const Max = Amount(math.MaxInt64)

// Scale is the number of decimal places of USD the unit holds.
const Scale = 9

// OneUSD is one dollar in the unit.
const OneUSD Amount = 1_000_000_000

// Errors of Parse. They read as the tail of "<path>: <error>".
var (
	ErrSyntax    = errors.New("must be a non-negative decimal USD amount: a number (0.15, 1e-6) or a decimal string (\"0.15\")")
	ErrNegative  = errors.New("must not be negative")
	ErrPrecision = errors.New("has more than 9 decimal places of USD (the unit is one nano-dollar); write it with fewer")
	ErrRange     = errors.New("is too large (at most 9223372036.854775807 USD)")
)

// Parse reads decimal USD text exactly into the unit (see the package doc).
func Parse(s string) (Amount, error) {
	v, err := ParseScaled(s, Scale)
	return Amount(v), err
}

// ParsePrice reads USD per million tokens exactly into a Price.
func ParsePrice(s string) (Price, error) {
	v, err := ParseScaled(s, Scale)
	return Price(v), err
}

// ParseJSON reads a JSON token holding decimal USD: a number, or a string
// holding one (no escapes). It is what configuration fields use.
func ParseJSON(tok []byte) (Amount, error) {
	s, err := jsonText(tok)
	if err != nil {
		return 0, err
	}
	return Parse(s)
}

// jsonText is the decimal text of a JSON number token or of a JSON string
// that holds only number characters.
func jsonText(tok []byte) (string, error) {
	if len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"' {
		return string(tok[1 : len(tok)-1]), nil
	}
	if len(tok) == 0 || tok[0] == '"' {
		return "", ErrSyntax
	}
	return string(tok), nil
}

// maxExp bounds the exponent read from text: any larger one makes every
// nonzero value overflow or lose precision, so its exact size is moot.
const maxExp = 1 << 20

// ParseScaled reads s (-?digits[.digits][(e|E)[+-]digits], leading zeros
// allowed) as value × 10^scale and returns it when that is an integer that
// fits an int64. It is the exact reader behind Parse, and reads per-token
// rates too (scale 15 turns USD per token into nano-USD per million
// tokens). scale must lie in [0, 30].
func ParseScaled(s string, scale int) (int64, error) {
	var d decimal
	if !d.read(s) {
		return 0, ErrSyntax
	}
	if d.nd == 0 && !d.overflow {
		return 0, nil // zero in any spelling, "-0" included
	}
	if d.neg {
		return 0, ErrNegative
	}
	if d.overflow {
		// More than 19 significant digits: no int64 holds them, so the
		// value is either past the range or finer than the unit.
		if d.mag+scale > 19 {
			return 0, ErrRange
		}
		return 0, ErrPrecision
	}
	exp := d.exp + scale
	if exp < 0 {
		return 0, ErrPrecision // the last kept digit is nonzero
	}
	if d.nd+exp > 19 {
		return 0, ErrRange
	}
	var v uint64
	for k := 0; k < d.nd; k++ {
		v = v*10 + uint64(d.digits[k]-'0')
	}
	for ; exp > 0; exp-- {
		v *= 10
	}
	if v > math.MaxInt64 {
		return 0, ErrRange
	}
	return int64(v), nil
}

// decimal is text read as digits × 10^exp: the significant digits without
// leading or trailing zeros (at most 19; overflow past that), and mag, the
// number of digits left of the point of the value (negative for 0.00x).
type decimal struct {
	digits   [19]byte
	nd       int
	exp      int
	mag      int
	neg      bool
	overflow bool
}

// read parses s, reporting false on a syntax error. A run of zeros is
// counted, not stored, so any length of text costs no memory.
func (d *decimal) read(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	zeros := 0 // zeros since the last nonzero digit: kept only if another follows
	intDigits, fracDigits := 0, 0
	firstInt := -1 // index of the first nonzero integer digit
	for ; i < len(s) && isDigit(s[i]); i++ {
		if firstInt < 0 && s[i] != '0' {
			firstInt = intDigits
		}
		intDigits++
		d.digit(s[i], &zeros)
	}
	if intDigits == 0 {
		return false
	}
	if firstInt >= 0 {
		d.mag = intDigits - firstInt
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isDigit(s[i]); i++ {
			if d.nd == 0 && !d.overflow && s[i] != '0' {
				d.mag = -fracDigits // 0.00x: the first nonzero digit's place
			}
			fracDigits++
			d.digit(s[i], &zeros)
		}
		if fracDigits == 0 {
			return false
		}
	}
	// The kept digits end at the last nonzero one; the zeros after it and
	// the places of the fraction set the power of ten.
	d.exp = zeros - fracDigits
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		e, n := 0, 0
		for ; i < len(s) && isDigit(s[i]); i++ {
			n++
			if e < maxExp {
				e = e*10 + int(s[i]-'0')
			}
		}
		if n == 0 {
			return false
		}
		if neg {
			e = -e
		}
		d.exp += e
		d.mag += e
	}
	return i == len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digit takes the next digit of the text (integer or fraction alike).
func (d *decimal) digit(c byte, zeros *int) {
	if c == '0' {
		if d.nd > 0 {
			*zeros++
		}
		return
	}
	for ; *zeros > 0 && !d.overflow; *zeros-- {
		d.push('0')
	}
	*zeros = 0
	d.push(c)
}

// push keeps one more significant digit, or marks the overflow.
func (d *decimal) push(c byte) {
	if d.nd == len(d.digits) {
		d.overflow = true
		return
	}
	d.digits[d.nd] = c
	d.nd++
}
