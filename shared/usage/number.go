package usage

import (
	"math"
	"strconv"

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
		return parseCount(bytesString(r.Raw))
	case jsonx.String:
		return parseCount(bytesString(text(r)))
	}
	return 0, false
}

func parseCount(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return min(n, maxCount), true
	}
	// Only decimal spellings: ParseFloat would also take hex, "Inf", "NaN"
	// and underscores, none of which a JSON backend means as a count.
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 1) {
		return 0, false // syntax error, or a negative overflow
	}
	if math.IsNaN(f) || f < 0 || f != math.Trunc(f) {
		return 0, false
	}
	if f >= float64(maxCount) {
		return maxCount, true
	}
	return int64(f), true
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
