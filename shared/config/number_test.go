package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIntegerFieldsAcceptIntegralSpellings(t *testing.T) {
	for _, spelling := range []string{`32000`, `32000.0`, `3.2e4`, `"32000"`, `"32000.0"`, `"32000.000"`} {
		t.Run(spelling, func(t *testing.T) {
			rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":`+spelling+`}}}}`)
			require.Equal(t, limited(32000), rt.Global.Tokens.Minute)
		})
	}
}

func TestIntegerFieldsRejectFractionsAndNonNumbers(t *testing.T) {
	for _, spelling := range []string{`1.5`, `"1.5"`, `"3.2e4"`, `"abc"`, `""`, `" 1"`, `true`, `[1]`, `{}`, `1e400`, `"99999999999999999999"`} {
		t.Run(spelling, func(t *testing.T) {
			msg := loadErr(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":`+spelling+`}}}}`)
			require.Contains(t, msg, "rate_limiting.limits.global.tokens_per_minute")
		})
	}
}

func TestNegativeIntegersParseButFailValidationWithPath(t *testing.T) {
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
