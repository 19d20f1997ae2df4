package money

import (
	"errors"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseReadsDecimalUSDExactly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want Amount
	}{
		{"200", 200 * OneUSD},
		{"200.00", 200 * OneUSD},
		{"0.15", 150_000_000},
		{"1e-6", 1_000},
		{"2.5e-06", 2_500},
		{"2.5E+2", 250 * OneUSD},
		{"0.000000001", 1},
		{"0.0000000010000", 1},
		{"1000000000e-18", 1},
		{"0", 0},
		{"-0", 0},
		{"0.000", 0},
		{"0e999999999999", 0},
		{"00012.50", 12_500_000_000},
		{"9223372036.854775807", Max},
		{"9223372036854775807e-9", Max},
		{"0.1000000000000000000000000000000", 100_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseRefusesWhatTheUnitCannotHoldExactly(t *testing.T) {
	tests := []struct {
		in   string
		want error
	}{
		{"-1", ErrNegative},
		{"-0.000000001", ErrNegative},
		{"0.0000000001", ErrPrecision},
		{"1e-10", ErrPrecision},
		{"1.0000000001", ErrPrecision},
		{"1e-999999999999999", ErrPrecision},
		{"0.12345678901234567891", ErrPrecision},
		{"9223372036.854775808", ErrRange},
		{"1e10", ErrRange},
		{"1e999999999999999", ErrRange},
		{"123456789012345678901234567890", ErrRange},
		{"", ErrSyntax},
		{"NaN", ErrSyntax},
		{"Inf", ErrSyntax},
		{"+1", ErrSyntax},
		{".5", ErrSyntax},
		{"5.", ErrSyntax},
		{"1e", ErrSyntax},
		{"1e+", ErrSyntax},
		{"0x10", ErrSyntax},
		{"1_000", ErrSyntax},
		{" 1", ErrSyntax},
		{"1 ", ErrSyntax},
		{"$1", ErrSyntax},
		{"1,5", ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestParseJSONTakesNumbersAndDecimalStrings(t *testing.T) {
	tests := []struct {
		tok  string
		want Amount
		err  error
	}{
		{`0.15`, 150_000_000, nil},
		{`"0.15"`, 150_000_000, nil},
		{`"2.5e-06"`, 2_500, nil},
		{`""`, 0, ErrSyntax},
		{`"`, 0, ErrSyntax},
		{`"\u0031"`, 0, ErrSyntax},
		{`true`, 0, ErrSyntax},
		{`null`, 0, ErrSyntax},
		{`"-3"`, 0, ErrNegative},
	}
	for _, tt := range tests {
		t.Run(tt.tok, func(t *testing.T) {
			got, err := ParseJSON([]byte(tt.tok))
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseScaledReadsPerTokenRatesAsPerMillionNanos(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"3e-06", 3_000_000_000},       // $3 per million tokens
		{"3.75e-08", 37_500_000},       // $0.0375 per million
		{"1.6666667e-07", 166_666_670}, // $0.16666667 per million
		{"0.000015", 15_000_000_000},   // $15 per million
		{"1e-15", 1},                   // the finest price
		{"0.00000000000000100", 1},     // trailing zeros are exact
		{"2.5e-6", 2_500_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseScaled(tt.in, 15)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
	_, err := ParseScaled("1e-16", 15)
	require.ErrorIs(t, err, ErrPrecision)
}

func TestFormatWritesExactUSDWithTwoToNineDecimals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   Amount
		want string
	}{
		{0, "0.00"},
		{5 * OneUSD, "5.00"},
		{4_980_000_000, "4.98"},
		{150_000_000, "0.15"},
		{375, "0.000000375"},
		{1, "0.000000001"},
		{123_456_789_012, "123.456789012"},
		{-1_500_000_000, "-1.50"},
		{Max, "9223372036.854775807"},
		{Amount(math.MinInt64), "-9223372036.854775808"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.in.String())
			if tt.in >= 0 {
				back, err := Parse(tt.want)
				require.NoError(t, err)
				require.Equal(t, tt.in, back)
			}
		})
	}
	require.Equal(t, "0.0375", Price(37_500_000).String())
}

// grammar is what ParseScaled accepts, sign included.
var grammar = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// smallExponent keeps the big.Rat oracle away from exponents whose exact
// value would take gigabytes.
var smallExponent = regexp.MustCompile(`^[^eE]*([eE][+-]?0*[0-9]{1,3})?$`)

// The exact reader agrees with math/big on every input it can be compared
// on: what it accepts is the exact value, and what it refuses is either
// outside the grammar, negative, finer than the unit or too large.
func FuzzParseScaledAgreesWithBigRat(f *testing.F) {
	for _, s := range []string{"200", "200.00", "0.15", "1e-6", "2.5e-06", "-0", "9223372036.854775807", "1e-10", "00.0015e3", "123456789012345678901234567890e-30"} {
		f.Add(s, uint8(9))
	}
	f.Add("3.75e-08", uint8(15))
	f.Fuzz(func(t *testing.T, s string, scale uint8) {
		sc := int(scale % 31)
		got, err := ParseScaled(s, sc)
		if !grammar.MatchString(s) {
			require.ErrorIs(t, err, ErrSyntax)
			return
		}
		if len(s) > 200 || !smallExponent.MatchString(s) {
			return
		}
		r, ok := new(big.Rat).SetString(s)
		require.True(t, ok, s)
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sc)), nil)))
		switch {
		case r.Sign() == 0:
			require.NoError(t, err)
			require.Zero(t, got)
		case r.Sign() < 0:
			require.ErrorIs(t, err, ErrNegative)
		case !r.IsInt() && new(big.Int).Quo(r.Num(), r.Denom()).IsInt64():
			require.ErrorIs(t, err, ErrPrecision, s)
		case !r.IsInt():
			// Both too fine and too large: either answer is right.
			require.True(t, errors.Is(err, ErrPrecision) || errors.Is(err, ErrRange), "%s: %v", s, err)
		case !r.Num().IsInt64():
			require.ErrorIs(t, err, ErrRange, s)
		default:
			require.NoError(t, err, s)
			require.Equal(t, r.Num().Int64(), got, s)
		}
	})
}

func FuzzFormatRoundTrips(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(1))
	f.Add(int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, v int64) {
		s := Amount(v).String()
		if v < 0 {
			_, err := Parse(s)
			require.ErrorIs(t, err, ErrNegative)
			return
		}
		back, err := Parse(s)
		require.NoError(t, err, s)
		require.Equal(t, Amount(v), back)
		want := strconv.FormatInt(v/1e9, 10)
		require.Equal(t, want, s[:len(want)])
	})
}
