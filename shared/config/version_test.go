package config

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestVersionsAreStableShortHex(t *testing.T) {
	t.Parallel()
	a, _ := mustLoad(t, tieredConfig)
	b, _ := mustLoad(t, tieredConfig)
	re := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for _, r := range []Rules{a.Global, a.APIKeyDefault, *a.APIKeyRules(a.Key(sha("free")))} {
		require.Regexp(t, re, r.Version)
		require.Regexp(t, re, r.TokensVersion)
		require.Regexp(t, re, r.RequestsVersion)
	}
	require.Equal(t, a.APIKeyDefault, b.APIKeyDefault)
	require.Equal(t, *a.APIKeyRules(a.Key(sha("free-own"))), *b.APIKeyRules(b.Key(sha("free-own"))))
}

func TestVersionChangesExactlyWhenADimensionsParametersChange(t *testing.T) {
	t.Parallel()
	base := `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000,"requests_per_second":2},"per_team":{"tokens_per_day":5000}}}}`
	tests := []struct {
		name                     string
		raw                      string
		globalTokens, globalReqs bool
		teamChanged              bool
	}{
		{"same numbers, other spelling", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":"1000.0","requests_per_second":"2"},"per_team":{"tokens_per_day":5e3}}}}`, false, false, false},
		{"global minute budget", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1001,"requests_per_second":2},"per_team":{"tokens_per_day":5000}}}}`, true, false, false},
		{"global request rate", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000,"requests_per_second":3},"per_team":{"tokens_per_day":5000}}}}`, false, true, false},
		{"divisor changes divided budgets", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000,"requests_per_second":2},"per_team":{"tokens_per_day":5000}},"budget_division":{"replicas":2}}}`, true, false, true},
		{"share changes only its period", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000,"requests_per_second":2},"per_team":{"tokens_per_day":5000}}},"deployment_token_budget":{"share_tokens_per_day":5000}}`, false, false, false},
		{"share differing from budget", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000,"requests_per_second":2},"per_team":{"tokens_per_day":5000}}},"deployment_token_budget":{"share_tokens_per_day":10}}`, false, false, true},
	}
	before, _ := mustLoad(t, base)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			after, _ := mustLoad(t, tc.raw)
			require.Equal(t, tc.globalTokens, before.Global.TokensVersion != after.Global.TokensVersion)
			require.Equal(t, tc.globalReqs, before.Global.RequestsVersion != after.Global.RequestsVersion)
			require.Equal(t, tc.globalTokens || tc.globalReqs, before.Global.Version != after.Global.Version)
			require.Equal(t, tc.teamChanged, before.Team.Version != after.Team.Version)
			require.Equal(t, before.Client.Version, after.Client.Version, "an untouched dimension keeps its buckets")
		})
	}
}

func TestZeroAllowanceAndUnlimitedHaveDifferentVersions(t *testing.T) {
	a := Rules{Tokens: TokenBudget{Minute: unlimited, Day: unlimited}}
	b := Rules{Tokens: TokenBudget{Minute: limited(0), Day: unlimited}}
	a.stamp()
	b.stamp()
	require.NotEqual(t, a.TokensVersion, b.TokensVersion)
}
