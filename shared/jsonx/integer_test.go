package jsonx

import (
	"math"
	"math/big"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseIntegerIsExactAndReportsFractionAndOverflow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want Integer
	}{
		{"32000", Integer{Value: 32000}},
		{"3.2e4", Integer{Value: 32000}},
		{"-0.000", Integer{}},
		{"007", Integer{Value: 7}},
		{"+5", Integer{Value: 5}},
		{"5.", Integer{Value: 5}},
		{".5", Integer{Fraction: true}},
		{"12.5", Integer{Value: 12, Fraction: true}},
		{"-12.5", Integer{Value: -12, Fraction: true, Negative: true}},
		{"-0.5", Integer{Fraction: true, Negative: true}},
		{"1.0000000000000000001", Integer{Value: 1, Fraction: true}},
		{"1e-400", Integer{Fraction: true}},
		{"9007199254740993.0", Integer{Value: 9007199254740993}},
		{"9223372036854775807", Integer{Value: math.MaxInt64}},
		{"-9223372036854775808", Integer{Value: math.MinInt64, Negative: true}},
		{"9223372036854775808", Integer{Value: math.MaxInt64, Overflow: true}},
		{"-9223372036854775809", Integer{Value: math.MinInt64, Overflow: true, Negative: true}},
		{"1e999999999999999999", Integer{Value: math.MaxInt64, Overflow: true}},
		{"-1.5e300", Integer{Value: math.MinInt64, Overflow: true, Negative: true}},
	} {
		got, ok := ParseInteger([]byte(c.in))
		require.True(t, ok, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	for _, in := range []string{"", "-", "+", ".", "e5", "1e", "1e+", "0x10", "1_000", " 1", "1 ", "Inf", "NaN", "1.2.3", "--1"} {
		_, ok := ParseInteger([]byte(in))
		require.False(t, ok, in)
	}
}

var hugeExponent = regexp.MustCompile(`[eE][+-]?0*[0-9]{4,}`)

var decimalText = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)

// ParseInteger agrees with exact rational arithmetic on every input: what
// it accepts, the value toward zero, and the two flags.
func FuzzParseIntegerAgreesWithBigRat(f *testing.F) {
	for _, s := range []string{"1", "-0", "1.5e3", "12e-1", "9223372036854775807", "1e19", "0.0001e4", "+.5", "5."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseInteger([]byte(s))
		if !decimalText.MatchString(s) {
			require.False(t, ok, "%q", s)
			return
		}
		require.True(t, ok, "%q", s)
		if len(s) > 64 || hugeExponent.MatchString(s) {
			return // big.Rat on huge exponents is slow; the table covers them
		}
		r, rok := new(big.Rat).SetString(s)
		if !rok {
			return
		}
		whole := new(big.Int).Quo(r.Num(), r.Denom()) // toward zero
		require.Equal(t, !r.IsInt(), got.Fraction, "%q", s)
		require.Equal(t, r.Sign() < 0, got.Negative, "%q", s)
		if whole.IsInt64() {
			require.False(t, got.Overflow, "%q", s)
			require.Equal(t, whole.Int64(), got.Value, "%q", s)
		} else {
			require.True(t, got.Overflow, "%q", s)
		}
	})
}

func TestPlainIntegerTakesOnlyAMinusAndUpTo18Digits(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int64{"0": 0, "-0": 0, "7": 7, "-42": -42, "999999999999999999": 999999999999999999, "007": 7} {
		n, ok := PlainInteger([]byte(s))
		require.True(t, ok, s)
		require.Equal(t, want, n, s)
	}
	for _, s := range []string{"", "-", "1.0", "1e3", "+5", " 5", "1000000000000000000", "0x1"} {
		_, ok := PlainInteger([]byte(s))
		require.False(t, ok, s)
	}
}
