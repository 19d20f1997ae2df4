package config

import (
	"errors"
	"math"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// Int is an integer field that also accepts an integral JSON number
// (32000.0, 3.2e4) or a decimal string ("32000", "32000.0"), because
// operators copy numbers out of tools that write floats or strings. A
// fractional value is an error; a negative one parses and is reported by
// Validate with its path.
type Int int64

// Float is a rate field (requests per second): a JSON number or a decimal
// string ("2.5").
type Float float64

var (
	errNotInteger = errors.New("must be a whole number (an integer, an integral number such as 32000.0, or a string such as \"32000\")")
	errNotNumber  = errors.New("must be a number or a decimal string")
	errTooLarge   = errors.New("is too large")
)

// UnmarshalJSON accepts the spellings documented on Int.
func (n *Int) UnmarshalJSON(b []byte) error {
	v, err := parseInt(b)
	if err != nil {
		return err
	}
	*n = Int(v)
	return nil
}

// UnmarshalJSON accepts a JSON number or a decimal string.
func (f *Float) UnmarshalJSON(b []byte) error {
	v, err := parseFloat(b)
	if err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// parseInt reads a JSON token as an Int. Strings follow the grammar
// -?digits(.0+)? so the string spelling never carries a fraction or exponent;
// numbers follow JSON's. The value is read exactly on its digits (jsonx), so
// 9007199254740993.0 is that integer and 1e-400 is a fraction, not zero.
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errNotInteger
	}
	text := b
	if b[0] == '"' {
		s, ok := unquoteDecimal(b)
		if !ok || !isIntString(s) {
			return 0, errNotInteger
		}
		text = []byte(s)
	} else if !jsonx.IsNumber(b) {
		return 0, errNotInteger
	}
	n, ok := jsonx.ParseInteger(text)
	switch {
	case !ok:
		return 0, errNotInteger
	case n.Overflow:
		return 0, errTooLarge
	case n.Fraction:
		return 0, errNotInteger
	}
	return n.Value, nil
}

// parseFloat reads a JSON number or a decimal string -?digits(.digits)?.
func parseFloat(b []byte) (float64, error) {
	if len(b) == 0 {
		return 0, errNotNumber
	}
	s := string(b)
	if b[0] == '"' {
		u, ok := unquoteDecimal(b)
		if !ok || !isDecimalString(u) {
			return 0, errNotNumber
		}
		s = u
	} else if !jsonx.IsNumber(b) {
		return 0, errNotNumber
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errTooLarge
	}
	return f, nil
}

// unquoteDecimal strips the quotes of a JSON string that holds only ASCII
// number characters (no escapes are needed or allowed there).
func unquoteDecimal(b []byte) (string, bool) {
	if len(b) < 3 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	return string(b[1 : len(b)-1]), true
}

// isIntString: -?digits(.0+)?
func isIntString(s string) bool {
	ok, integral := decimalShape(s)
	return ok && integral
}

// isDecimalString: -?digits(.digits)?
func isDecimalString(s string) bool {
	ok, _ := decimalShape(s)
	return ok
}

// decimalShape reports whether s is -?digits(.digits)? and whether its
// fraction, if it has one, is all zeros (so the value is a whole number).
func decimalShape(s string) (ok, integral bool) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	d := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		d++
	}
	if d == 0 {
		return false, false
	}
	if i == len(s) {
		return true, true
	}
	if s[i] != '.' || i+1 == len(s) {
		return false, false
	}
	integral = true
	for i++; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false, false
		}
		integral = integral && s[i] == '0'
	}
	return true, integral
}

// intVal is the value of an optional Int, 0 when absent.
func intVal(p *Int) int64 {
	if p == nil {
		return 0
	}
	return int64(*p)
}

// floatVal is the value of an optional Float, 0 when absent.
func floatVal(p *Float) float64 {
	if p == nil {
		return 0
	}
	return float64(*p)
}
