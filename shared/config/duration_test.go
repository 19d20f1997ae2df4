package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestADurationIsADurationStringOrANumberOfSeconds(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64 // ns; -1: an error
	}{
		{`"60s"`, 60e9}, {`"1m"`, 60e9}, {`"1m30s"`, 90e9}, {`"500ms"`, 500e6}, {`"1.5h"`, 5400e9},
		{`".5s"`, 500e6}, {`"250us"`, 250e3}, {`"250µs"`, 250e3}, {`"7ns"`, 7}, {`"0s"`, 0},
		{`60`, 60e9}, {`0.25`, 250e6}, {`"60"`, 60e9}, {`6e1`, 60e9},
		{`"-1s"`, -1}, {`-1`, -1}, {`"60"`, 60e9}, {`"s"`, -1}, {`"60x"`, -1}, {`"1m30"`, -1},
		{`""`, -1}, {`"5.s"`, -1}, {`true`, -1}, {`"1e400s"`, -1}, {`1e300`, -1}, {`"99999999999h"`, -1},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := parseDuration([]byte(c.in))
			if c.want < 0 {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestWindowDurationLoadsAndWarnsItHasNoEffect(t *testing.T) {
	t.Parallel()
	rt, w := mustLoad(t, `{"rate_limiting":{"limits":{
		"global":{"requests_per_second":10,"burst_capacity":20,"window_duration":"60s"},
		"per_model":{"gpt-4o":{"tokens_per_minute":1000,"window_duration":60}}},
		"tier_overrides":{"gold":{"per_api_key":{"window_duration":"1m"}}},
		"budget_division":{"replicas":1}}}`)
	require.NotNil(t, rt)
	requireWarning(t, w, "rate_limiting.limits.global.window_duration: has no effect")
	requireWarning(t, w, "rate_limiting.limits.per_model.gpt-4o.window_duration: has no effect")
	requireWarning(t, w, "rate_limiting.tier_overrides.gold.per_api_key.window_duration: has no effect")
	same, _ := mustLoad(t, `{"rate_limiting":{"limits":{"global":{"requests_per_second":10,"burst_capacity":20},
		"per_model":{"gpt-4o":{"tokens_per_minute":1000}}},"budget_division":{"replicas":1}}}`)
	require.Equal(t, same.Global, rt.Global, "it changes no limit")

	msg := loadErr(t, `{"rate_limiting":{"limits":{"global":{"window_duration":"soon"}}}}`)
	require.Contains(t, msg, "rate_limiting.limits.global.window_duration")
	require.Contains(t, msg, `a duration such as "60s"`)
	require.False(t, strings.Contains(loadErr(t, `{"rate_limiting":{"limits":{"global":{"window_duration":"-5s"}}}}`), "unknown"))
}

func FuzzDurationNeverPanicsAndIsNeverNegative(f *testing.F) {
	for _, s := range []string{`"60s"`, `"1m30.5s"`, `60`, `"-1s"`, `".s"`, `"µ"`, `"9999999999999h"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := parseDuration(b); err == nil {
			require.GreaterOrEqual(t, v, int64(0))
		}
	})
}
