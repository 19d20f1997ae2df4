package metrics

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// extract applies the rules the way Envoy's TagExtractorImpl does: for each
// rule in order, find the first match, take the nested group as the value
// and cut the first group from the name.
func extract(name string) (string, map[string]string) {
	tags := map[string]string{}
	for _, r := range TagRules() {
		re := regexp.MustCompile(r.Regex)
		m := re.FindStringSubmatchIndex(name)
		if m == nil {
			continue
		}
		tags[r.Name] = name[m[4]:m[5]]
		name = name[:m[2]] + name[m[3]:]
	}
	return name, tags
}

func TestNameRoundTripsThroughEnvoyTagRules(t *testing.T) {
	cases := []struct {
		family string
		pairs  []string
	}{
		{TokenBudgetPeriodTokens, []string{LabelOutcome, "reserved", LabelDimension, "api_key", LabelBudget, "day"}},
		{Skipped, []string{LabelDimension, "token_budget_api_key"}},
		{Exceeded, []string{LabelLimitType, "token_budget"}},
		{RedisUnavailable, []string{LabelDimension, "model", LabelAction, "fallback"}},
		{FailOpen, []string{LabelReason, "body_too_large"}},
		{Requests, nil},
		{SpendRefusals, []string{LabelPeriod, "month", LabelScope, "api_key"}},
		{SpendUSD, []string{LabelScope, "team"}},
	}
	for _, c := range cases {
		name := Name(c.family, c.pairs...)
		gotFamily, tags := extract(name)
		require.Equal(t, c.family, gotFamily, name)
		want := map[string]string{}
		for i := 1; i < len(c.pairs); i += 2 {
			want[c.pairs[i-1]] = c.pairs[i]
		}
		require.Equal(t, want, tags, name)
	}
}

func TestNameWritesLabelsInOneOrder(t *testing.T) {
	a := Name(TokenBudgetPeriodTokens, LabelDimension, "global", LabelBudget, "minute", LabelOutcome, "charged")
	b := Name(TokenBudgetPeriodTokens, LabelOutcome, "charged", LabelBudget, "minute", LabelDimension, "global")
	require.Equal(t, a, b)
	require.Equal(t, "rate_limit_token_budget_period_tokens_total_dimension=global_budget=minute_outcome=charged", a)
}
