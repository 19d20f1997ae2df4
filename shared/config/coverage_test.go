package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAConfigThatLimitsNothingIsWarnedAbout(t *testing.T) {
	const warning = "this config limits nothing"
	tests := []struct {
		name   string
		cfg    string
		warned bool
	}{
		{"empty", `{}`, true},
		{"zeros are unlimited", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":0},"per_api_key":{"requests_per_minute":0}}}}`, true},
		{"per_backend tokens attach nowhere", `{"rate_limiting":{"limits":{"per_backend":{"tokens_per_minute":5}}}}`, true},
		{"pricing alone", `{"pricing":{"default":{"input":"1","output":"1"}}}`, true},
		{"a key budget", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":5}},"budget_division":{"replicas":1}}}`, false},
		{"a request rate", `{"rate_limiting":{"limits":{"global":{"requests_per_second":5}}}}`, false},
		{"a concurrency limit", `{"rate_limiting":{"limits":{"per_client":{"concurrent_requests":5}}}}`, false},
		{"a per_backend concurrency limit", `{"rate_limiting":{"limits":{"per_backend":{"concurrent_requests":3}}}}`, false},
		{"a model budget", `{"rate_limiting":{"limits":{"per_model":{"m":{"tokens_per_day":5}}},"budget_division":{"replicas":1}}}`, false},
		{"a tier", `{"rate_limiting":{"tier_overrides":{"gold":{"per_api_key":{"requests_per_minute":5}}}},"api_keys":[{"key":"k","tier":"gold"}]}`, false},
		{"a key's own rate", `{"api_keys":[{"key":"k","rate_limit":2}]}`, false},
		{"a spend limit", `{"pricing":{"default":{"input":"1","output":"1"}},"identity":{"unknown_api_keys":"refuse"},"api_keys":[{"key":"k","spend_limit_day_usd":"1"}]}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := warningsOf(t, tc.cfg)
			if tc.warned {
				requireWarning(t, w, "rate_limiting: "+warning, "only metered")
				return
			}
			for _, s := range w {
				require.NotContains(t, s, warning)
			}
		})
	}
}

func TestUnknownKeysWithTheirOwnBudgetAreWarnedToSpendWithoutALimitWhenOnlyListedKeysHaveOne(t *testing.T) {
	t.Parallel()
	const warning = "an unknown key spends without a USD limit"
	prices := `"pricing":{"default":{"input":"1","output":"1"}}`
	tests := []struct {
		name   string
		cfg    string
		warned bool
	}{
		{"a key's own limit", `{` + prices + `,"api_keys":[{"key":"k","spend_limit_day_usd":"1"}]}`, true},
		{"a tier's limit", `{` + prices + `,"rate_limiting":{"tier_overrides":{"gold":{"cost_per_day_usd":"1"}}},"api_keys":[{"key":"k","tier":"gold"}]}`, true},
		{"a team only api_keys name", `{` + prices + `,"spend_limits":{"teams":{"t":{"month_usd":"9"}}},"api_keys":[{"key":"k","team":"t"}]}`, true},
		{"own_budget written out", `{` + prices + `,"identity":{"unknown_api_keys":"own_budget"},"api_keys":[{"key":"k","spend_limit_day_usd":"1"}]}`, true},
		{"unknown keys refused", `{` + prices + `,"identity":{"unknown_api_keys":"refuse"},"api_keys":[{"key":"k","spend_limit_day_usd":"1"}]}`, false},
		{"a trusted team header reaches the team's limit", `{` + prices + `,"identity":{"trusted_team_header":"x-team"},"spend_limits":{"teams":{"t":{"month_usd":"9"}}},"api_keys":[{"key":"k","team":"t"}]}`, false},
		{"a trusted user header reaches the user's limit", `{` + prices + `,"identity":{"trusted_user_header":"x-user"},"spend_limits":{"users":{"u":{"day_usd":"9"}}}}`, false},
		{"fleet_spend checks every request against the ledger", `{` + prices + `,"rate_limiting":{"storage":"redis","redis":{"cluster":"c","token":"t","fleet_spend":true}},"api_keys":[{"key":"k","spend_limit_day_usd":"1"}]}`, false},
		{"no spend limit at all", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":5}},"budget_division":{"replicas":1}}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := warningsOf(t, tc.cfg)
			if tc.warned {
				requireWarning(t, w, "identity.unknown_api_keys", `"own_budget"`, warning, `"refuse"`)
				return
			}
			for _, s := range w {
				require.NotContains(t, s, warning)
			}
		})
	}
}
