package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIntegerFieldsAcceptIntegralSpellings(t *testing.T) {
	t.Parallel()
	for _, spelling := range []string{`32000`, `32000.0`, `3.2e4`, `"32000"`, `"32000.0"`, `"32000.000"`} {
		t.Run(spelling, func(t *testing.T) {
			rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":`+spelling+`}}}}`)
			require.Equal(t, limited(32000), rt.Global.Tokens.Minute)
		})
	}
}

func TestIntegerFieldsRejectFractionsAndNonNumbers(t *testing.T) {
	t.Parallel()
	for _, spelling := range []string{`1.5`, `"1.5"`, `"3.2e4"`, `"abc"`, `""`, `" 1"`, `true`, `[1]`, `{}`, `1e400`, `"99999999999999999999"`} {
		t.Run(spelling, func(t *testing.T) {
			msg := loadErr(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":`+spelling+`}}}}`)
			require.Contains(t, msg, "rate_limiting.limits.global.tokens_per_minute")
		})
	}
}

// An integer field is read on its digits, never through a float: a large
// spelled-out number keeps its last digit, a tiny one is a fraction rather
// than zero, and the whole int64 range is open in any spelling.
func TestIntegerFieldsAreReadExactlyOnTheirDigits(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  error
	}{
		{`9007199254740993.0`, 9007199254740993, nil},
		{`9.007199254740993e15`, 9007199254740993, nil},
		{`9.22e18`, 9220000000000000000, nil},
		{`"9223372036854775807.0"`, 9223372036854775807, nil},
		{`1e-400`, 0, errNotInteger},
		{`1.0000000000000000001`, 0, errNotInteger},
		{`9.3e18`, 0, errTooLarge},
		{`10000000000000000000.5`, 0, errTooLarge},
	} {
		n, err := parseInt([]byte(c.in))
		require.Equal(t, c.err, err, c.in)
		require.Equal(t, c.want, n, c.in)
	}
}

func TestNegativeIntegersParseButFailValidationWithPath(t *testing.T) {
	t.Parallel()
	for _, spelling := range []string{`-1`, `-1.0`, `"-5"`} {
		t.Run(spelling, func(t *testing.T) {
			c, err := Parse([]byte(`{"rate_limiting":{"limits":{"per_team":{"tokens_per_day":` + spelling + `}}}}`))
			require.NoError(t, err)
			err = c.Validate()
			require.Error(t, err)
			require.Contains(t, err.Error(), "rate_limiting.limits.per_team.tokens_per_day: must not be negative")
		})
	}
}

func TestRateFieldsAcceptFractionsAsNumberOrString(t *testing.T) {
	t.Parallel()
	for _, spelling := range []string{`2.5`, `"2.5"`, `25e-1`} {
		t.Run(spelling, func(t *testing.T) {
			rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"global":{"requests_per_second":`+spelling+`}}}}`)
			require.InDelta(t, 2.5, rt.Global.Requests.PerSecond, 1e-12)
		})
	}
	msg := loadErr(t, `{"rate_limiting":{"limits":{"global":{"requests_per_second":"fast"}}}}`)
	require.Contains(t, msg, "rate_limiting.limits.global.requests_per_second")
}

func FuzzNumberParsersNeverPanic(f *testing.F) {
	for _, s := range []string{`1`, `"1.0"`, `-0`, `1e308`, `"`, `""`, `"-"`, `"1."`, `9223372036854775808`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseInt([]byte(s))
		_, _ = parseFloat([]byte(s))
	})
}
