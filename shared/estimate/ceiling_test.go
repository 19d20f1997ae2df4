package estimate

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// Pydantic-based upstreams coerce floats and numeric strings and then
// generate up to the coerced value, so every spelling must reserve alike.
func TestOutputCeilingReadsEveryNumericSpellingAlike(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`32000`, `32000.0`, `3.2e4`, `"32000"`, `" 32000 "`, `"\t32000\n"`, `"32_000"`, `"32000.0"`, `"+32000"`} {
		n, ok := OutputCeiling(jsonx.Parse([]byte(raw)))
		require.True(t, ok, raw)
		require.Equal(t, int64(32000), n, raw)
	}
}

func TestOutputCeilingRoundsFractionsUpAndClampsAbsurdValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw  string
		want int64
	}{
		{`100.5`, 101},
		{`0.0001`, 1},
		{`1e-300`, 1}, // small, and still a float: rounds up as any fraction
		{`"4.9e-324"`, 1},
		{`1e-700`, 0}, // too small for a float: zero, as pydantic reads it
		{`"1e-700"`, 0},
		{`0.1e-400`, 0},
		{`0`, 0},
		{`"-0"`, 0},
		{`10000001`, MaxOutput},
		{`1e30`, MaxOutput},
		{`1e400`, MaxOutput},
		{`"99999999999999999999999"`, MaxOutput},
	} {
		n, ok := OutputCeiling(jsonx.Parse([]byte(tc.raw)))
		require.True(t, ok, tc.raw)
		require.Equal(t, tc.want, n, tc.raw)
	}
}

func TestOutputCeilingIgnoresNegativeNonNumericAndNonFiniteValues(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`-1`, `-1e400`, `"-5"`, `"abc"`, `"NaN"`, `"Inf"`, `"infinity"`, `"0x10"`, `""`, `"  "`, `"3 2"`, `"_32"`, `"32_"`, `null`, `true`, `{}`, `[1]`} {
		n, ok := OutputCeiling(jsonx.Parse([]byte(raw)))
		require.False(t, ok, raw)
		require.Zero(t, n, raw)
	}
	_, ok := OutputCeiling(jsonx.Value{})
	require.False(t, ok, "a missing field states no ceiling")
}

// Plain digits take a path of their own; it reads every such number as the
// reader of every spelling does, at each edge: zero, a minus, MaxOutput and
// around it, eighteen digits and more.
func TestPlainDigitsReadAsTheyDoInAnySpelling(t *testing.T) {
	t.Parallel()
	edges := []string{"0", "-0", "-1", "1", "00", "0012", "-0012", "4096", "9999999", "10000000", "10000001",
		"999999999999999999", "-999999999999999999", "1000000000000000000", "", "-", "1.5", "1e3"}
	for n := range int64(64) {
		edges = append(edges, strconv.FormatInt(MaxOutput-32+n, 10), strconv.FormatInt(1<<n, 10))
	}
	for _, s := range edges {
		n, ok := parseCeiling([]byte(s))
		wantN, wantOK := parseSpelledCeiling([]byte(s))
		require.Equal(t, wantOK, ok, s)
		require.Equal(t, wantN, n, s)
	}
}
