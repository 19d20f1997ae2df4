package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func warningsOf(t *testing.T, raw string) []string {
	t.Helper()
	_, w := mustLoad(t, raw)
	return w
}

func requireWarning(t *testing.T, warnings []string, parts ...string) {
	t.Helper()
	for _, w := range warnings {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			return
		}
	}
	require.Failf(t, "missing warning", "want a warning containing %q, got %q", parts, warnings)
}

func TestPerBackendTokenFieldsWarnTheyHaveNoEffect(t *testing.T) {
	t.Parallel()
	w := warningsOf(t, `{"rate_limiting":{"limits":{"per_backend":{"tokens_per_minute":5,"tokens_per_day":7,"concurrent_requests":3}},"budget_division":{"replicas":1}}}`)
	requireWarning(t, w, "rate_limiting.limits.per_backend.tokens_per_minute", "no effect")
	requireWarning(t, w, "rate_limiting.limits.per_backend.tokens_per_day", "no effect")
	require.Len(t, w, 2, "per_backend budgets are not admission budgets, so no per-replica warning")
	require.Empty(t, warningsOf(t, `{"rate_limiting":{"limits":{"per_backend":{"concurrent_requests":3}}}}`))
}

func TestInMemoryTokenBudgetWithoutDivisionNamesBothAlternatives(t *testing.T) {
	w := warningsOf(t, `{"rate_limiting":{"limits":{"per_model":{"m":{"tokens_per_day":5}}}}}`)
	requireWarning(t, w, "per replica", "tokens_per_day", "rate_limiting.budget_division.replicas", "deployment_token_budget")

	tests := []struct {
		name string
		raw  string
		warn bool
	}{
		{"replicas hint silences it", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":5}},"budget_division":{"replicas":1}}}`, false},
		{"share for the period silences it", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":5}}},"deployment_token_budget":{"share_tokens_per_minute":5}}`, false},
		{"share for the other period does not", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":5}}},"deployment_token_budget":{"share_tokens_per_day":5}}`, true},
		{"redis storage carries the total", `{"rate_limiting":{"storage":"redis","redis":{"cluster":"c"},"limits":{"global":{"tokens_per_minute":5}}}}`, false},
		{"zero budgets are unlimited", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":0}}}}`, false},
		{"request limits alone are not token budgets", `{"rate_limiting":{"limits":{"global":{"requests_per_second":5}}}}`, false},
		{"a per-key minute override alone is not divided", `{"api_keys":[{"key":"k","rate_limit_tokens_per_minute":5}]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			found := false
			for _, x := range warningsOf(t, tc.raw) {
				found = found || strings.Contains(x, "per replica")
			}
			require.Equal(t, tc.warn, found)
		})
	}
}

func TestDivisionHintWithRedisSaysItSizesTheFallbackBuckets(t *testing.T) {
	t.Parallel()
	w := warningsOf(t, `{"rate_limiting":{"storage":"redis","redis":{"cluster":"c"},"budget_division":{"replicas":3}}}`)
	requireWarning(t, w, "rate_limiting.budget_division", "redis", "sizes the replica-local buckets", "fallback_to_memory")
	w = warningsOf(t, `{"rate_limiting":{"storage":"redis","redis":{"cluster":"c","fallback_to_memory":false},"budget_division":{"replicas":3}}}`)
	requireWarning(t, w, "rate_limiting.budget_division", "inert", "redis", "fallback_to_memory false")
}

func TestSmallerWarningsPointAtLikelyMistakes(t *testing.T) {
	t.Parallel()
	requireWarning(t, warningsOf(t, `{"api_keys":[{"key":"k","tier":"prp"}],"rate_limiting":{"tier_overrides":{"pro":{}}}}`),
		`api_keys[0].tier`, `"prp"`)
	requireWarning(t, warningsOf(t, `{"deployment_token_budget":{"share_tokens_per_minute":5}}`),
		"deployment_token_budget.share_tokens_per_minute", "no effect")
	requireWarning(t, warningsOf(t, `{"rate_limiting":{"redis":{"cluster":"c"}}}`), "rate_limiting.redis", "ignored")
	requireWarning(t, warningsOf(t, `{"rate_limiting":{"limits":{"per_user":{"requests_per_second":1}}}}`), "rate_limiting.limits.per_user", "trusted_user_header")
	require.Empty(t, warningsOf(t, `{"rate_limiting":{"limits":{"per_user":{"requests_per_second":1}}},"identity":{"trusted_user_header":"x-user"}}`))
	requireWarning(t, warningsOf(t, `{"rate_limiting":{"limits":{"per_team":{"requests_per_second":1}}}}`), "rate_limiting.limits.per_team", "trusted_team_header")
	require.Empty(t, warningsOf(t, `{"rate_limiting":{"limits":{"per_team":{"requests_per_second":1}}},"api_keys":[{"key":"k","team":"t"}]}`))
}

func TestAKeyOnlyBudgetWarnsThatKeylessRequestsAreUnlimited(t *testing.T) {
	keyOnly := `"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100}},"budget_division":{"replicas":1}}`
	requireWarning(t, warningsOf(t, `{`+keyOnly+`}`), "identity.missing_api_key", "unlimited")
	for _, cfg := range []string{
		`{` + keyOnly + `,"identity":{"missing_api_key":"refuse"}}`,
		`{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100},"global":{"tokens_per_day":5}},"budget_division":{"replicas":1}}}`,
		`{"rate_limiting":{"limits":{"per_client":{"tokens_per_minute":100}},"budget_division":{"replicas":1}}}`,
	} {
		for _, w := range warningsOf(t, cfg) {
			require.NotContains(t, w, "identity.missing_api_key", cfg)
		}
	}
}
