package usage

import (
	"math"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// maxCount caps one reported counter. A backend reporting more than a
// trillion tokens for one response is broken; clamping keeps the sum of four
// counters and every bucket computation far from int64 overflow while still
// charging the maximum rather than nothing.
const maxCount int64 = 1_000_000_000_000

// readCount reads a token counter the way the estimator reads an output
// ceiling: a JSON number or a numeric string ("32000", 32000.0), integral and
// non-negative, clamped at maxCount. Anything else (fractions, negatives, NaN,
// booleans, null, absent) is not a counter.
func readCount(r jsonx.Value) (int64, bool) {
	switch r.Kind {
	case jsonx.Number:
		return parseCount(r.Raw)
	case jsonx.String:
		return parseCount(text(r))
	}
	return 0, false
}

// parseCount reads the number exactly (jsonx.ParseInteger): only the
// characters of a decimal number, so strconv's hex, "Inf", "NaN" and
// underscores never count; a fraction or a negative is no count, a count
// beyond maxCount is maxCount.
func parseCount(s []byte) (int64, bool) {
	n, ok := jsonx.ParseInteger(s)
	switch {
	case !ok, n.Negative, n.Fraction:
		return 0, false
	case n.Overflow:
		return maxCount, true
	}
	return min(n.Value, maxCount), true
}

// addCount adds without overflow; counts only grow, so saturation at the
// int64 ceiling is the only failure mode to guard.
func addCount(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
