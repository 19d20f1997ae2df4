package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckReportsEveryParseAndValidationProblemInOneRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		raw     string
		want    []string // every line, in order
		notWant []string
	}{
		{
			name: "an unknown field does not hide a bad value beside it",
			raw:  `{"rate_limiting":{"storage":"x","limits":{"per_api_key":{"tokens_per_minut":5,"tokens_per_day":-1}}}}`,
			want: []string{
				`parse plugin config: rate_limiting.limits.per_api_key: unknown field "tokens_per_minut" (did you mean "tokens_per_minute"?)`,
				`invalid plugin config: rate_limiting.storage: must be "memory" or "redis", not "x"`,
				`rate_limiting.limits.per_api_key.tokens_per_day: must not be negative`,
			},
		},
		{
			name: "a value that did not decode is reported once, by the parser",
			raw:  `{"rate_limiting":{"max_buckets":"many"},"api_keys":[{"key":""}]}`,
			want: []string{
				`parse plugin config: rate_limiting.max_buckets: must be a whole number`,
				`invalid plugin config: api_keys[0].key: key is empty`,
			},
			notWant: []string{"must be greater than 0"},
		},
		{
			name: "a block of the wrong type covers the checks inside it",
			raw:  `{"rate_limiting":{"budget_division":[1],"redis":{"timeout_ms":0,"cluster":"c"}}}`,
			want: []string{
				`parse plugin config: rate_limiting.budget_division: must be an object`,
				`invalid plugin config: rate_limiting.redis.timeout_ms: must be greater than 0`,
			},
			notWant: []string{"replicas"},
		},
		{
			name: "validation problems alone",
			raw:  `{"rate_limiting":{"max_buckets":0,"storage":"redis"}}`,
			want: []string{
				`invalid plugin config: rate_limiting.max_buckets: must be greater than 0`,
				`rate_limiting.redis.cluster: is required when storage is "redis"`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Check([]byte(tc.raw))
			require.Error(t, err)
			lines := strings.Split(err.Error(), "\n")
			require.Len(t, lines, len(tc.want), err.Error())
			for i, w := range tc.want {
				require.True(t, strings.HasPrefix(lines[i], w), "line %d: %q does not start with %q", i, lines[i], w)
			}
			for _, nw := range tc.notWant {
				require.NotContains(t, err.Error(), nw)
			}
			_, _, lerr := Load([]byte(tc.raw))
			require.EqualError(t, lerr, err.Error(), "the filter logs the same report")
		})
	}
}

func TestCheckAcceptsAValidConfigAndRefusesNonObjects(t *testing.T) {
	t.Parallel()
	c, err := Check([]byte(`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":10}}}}`))
	require.NoError(t, err)
	require.NotNil(t, c)
	for _, raw := range []string{`[]`, `{`, `"x"`} {
		c, err := Check([]byte(raw))
		require.Error(t, err, raw)
		require.Nil(t, c)
	}
}
