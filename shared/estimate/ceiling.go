package estimate

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// MaxOutput caps any output ceiling. No model generates ten million tokens
// in one response; a larger stated value is clamped rather than ignored, so
// an absurd ceiling still reserves (and is refused as larger than the
// burst) instead of falling back to the small default.
const MaxOutput int64 = 10_000_000

// CeilingFields are the top-level request members that state an output
// ceiling in the APIs the estimator reads: max_tokens (chat completions,
// completions, Anthropic messages), max_completion_tokens (chat
// completions) and max_output_tokens (Responses). Parse reads every one of
// them and refuses a repeated copy; a clamp rewrites every one of them.
var CeilingFields = [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"}

// OutputCeiling reads one ceiling field (max_tokens and its siblings) the
// way pydantic-based upstreams coerce it, because they generate up to the
// coerced value: a JSON integer, an integral or fractional float (rounded
// up), or a string holding such a number, surrounded by ASCII whitespace and
// with underscores between digits allowed. A negative number, NaN, an
// infinity spelt out, a non-number or an unparsable string is no ceiling
// (false). Values above MaxOutput read as MaxOutput. Zero reads as 0 with
// true: it is a number the backend coerces, but Parse does not take it as a
// stated ceiling (see StatedCeiling).
func OutputCeiling(v jsonx.Value) (int64, bool) {
	switch v.Kind {
	case jsonx.Number:
		return parseCeiling(v.Raw)
	case jsonx.String:
		// StrBytes allocates only for a string with escapes.
		return parseCeiling(trimSpace(v.StrBytes()))
	}
	return 0, false
}

// StatedCeiling reads a ceiling field as Parse and the clamp take it: a
// positive ceiling (true), or none (false). Zero and negative values state
// no ceiling, because backends read them as "no limit" or reject them; a
// request that carries one reserves what an absent ceiling reserves.
func StatedCeiling(v jsonx.Value) (int64, bool) {
	n, ok := OutputCeiling(v)
	if !ok || n <= 0 {
		return 0, false
	}
	return n, true
}

func trimSpace(s []byte) []byte {
	for len(s) > 0 && byteClass[s[0]] == clsSpace {
		s = s[1:]
	}
	for len(s) > 0 && byteClass[s[len(s)-1]] == clsSpace {
		s = s[:len(s)-1]
	}
	return s
}

// parseCeiling reads the number exactly (jsonx.ParseInteger), after
// dropping the underscores Python's int() and pydantic accept between
// digits (32_000): only the characters of a decimal number, so strconv's
// "Inf", "NaN" and hex forms never get through. A fraction rounds up, a
// negative is no ceiling, a positive number too small for a float64
// (1e-700) reads as 0, anything above MaxOutput is MaxOutput.
func parseCeiling(s []byte) (int64, bool) {
	if n, ok := jsonx.PlainInteger(s); ok {
		// Plain digits, nearly every ceiling: what parseSpelledCeiling
		// reads them as, without its copy and its calls.
		switch {
		case n < 0:
			return 0, false
		case n >= MaxOutput:
			return MaxOutput, true
		}
		return n, true
	}
	return parseSpelledCeiling(s)
}

// parseSpelledCeiling is parseCeiling for any spelling, plain digits
// included.
func parseSpelledCeiling(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 64 {
		return 0, false
	}
	var buf [64]byte
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' && i > 0 && i+1 < len(s) && isDigit(s[i-1]) && isDigit(s[i+1]) {
			continue
		}
		buf[n] = c
		n++
	}
	v, ok := jsonx.ParseInteger(buf[:n])
	switch {
	case !ok, v.Negative:
		return 0, false
	case v.Overflow || v.Value >= MaxOutput:
		return MaxOutput, true
	case v.Fraction && v.Value == 0 && underflows(buf[:n]):
		// Too small for a float: pydantic's coercion reads 0.0, as did
		// this reader before it read numbers exactly, and zero states no
		// ceiling; rounding it up to 1 would reserve less than an absent
		// ceiling reserves.
		return 0, true
	case v.Fraction:
		return v.Value + 1, true
	}
	return v.Value, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// underflows reports that the number s, known to lie strictly between 0
// and 1, is too small for a float64: strconv reads it as zero. Only the rare
// positive fraction below 1 pays for the float parse.
func underflows(s []byte) bool {
	f, _ := strconv.ParseFloat(string(s), 64)
	return f == 0
}
