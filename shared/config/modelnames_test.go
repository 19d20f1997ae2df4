package config

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
)

func TestEntriesThatShadowAnotherAreListed(t *testing.T) {
	c, err := Parse([]byte(`{"pricing":{"gpt-4o":{"input":1,"output":1},"gpt-4o-mini":{"input":1,"output":1},` +
		`"openai/gpt-4o":{"input":1,"output":1},"default":{"input":1,"output":1},"o1":{"input":1,"output":1}},` +
		`"rate_limiting":{"limits":{"per_model":{"claude-3":{"tokens_per_minute":10}}}},` +
		`"models":{"claude-3-5-sonnet":{"concurrent_requests":2},"claude-3":{"concurrent_requests":1}}}`))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	w := c.ModelNameNotes()
	require.Equal(t, []string{
		`pricing.gpt-4o-mini: shadows pricing.gpt-4o for "gpt-4o-mini" and every spelling that extends it at a '-', '@' or ':' (a snapshot such as "gpt-4o-mini-2025-01-01"), which would otherwise resolve to "gpt-4o"`,
		`pricing["openai/gpt-4o"]: shadows pricing.gpt-4o for the spellings with the provider prefix "openai/"; every other spelling of "gpt-4o" resolves to "gpt-4o"`,
		`pricing.gpt-4o-mini: shadows pricing["openai/gpt-4o"] for "gpt-4o-mini" and every spelling that extends it at a '-', '@' or ':' (a snapshot such as "gpt-4o-mini-2025-01-01"), which would otherwise resolve to "openai/gpt-4o"`,
		`models.claude-3-5-sonnet: shadows rate_limiting.limits.per_model.claude-3 for "claude-3-5-sonnet" and every spelling that extends it at a '-', '@' or ':' (a snapshot such as "claude-3-5-sonnet-2025-01-01"), which would otherwise resolve to "claude-3"`,
	}, w)
	for _, n := range w {
		require.NotContains(t, c.Warnings(), n, "a note, not a warning: listing both is what a correct config does")
	}
}

func TestEntriesEqualButForLetterCaseAreRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ rule, cfg, problem string }{
		{"two prices", `{"pricing":{"gpt-4o":{"input":1,"output":1},"GPT-4o":{"input":2,"output":2}}}`,
			`pricing.gpt-4o: names the same model as pricing.GPT-4o (model names are matched without regard to letter case)`},
		{"a budget and a model limit", `{"rate_limiting":{"limits":{"per_model":{"GPT-4o":{"tokens_per_minute":10}}}},"models":{"gpt-4o":{"concurrent_requests":1}}}`,
			`models.gpt-4o: names the same model as rate_limiting.limits.per_model.GPT-4o (model names are matched without regard to letter case)`},
	} {
		t.Run(c.rule, func(t *testing.T) {
			cfg, err := Parse([]byte(c.cfg))
			require.NoError(t, err)
			require.ErrorContains(t, cfg.Validate(), c.problem)
		})
	}
}

func TestTheCompiledPriceListResolvesSpellings(t *testing.T) {
	t.Parallel()
	rt, _, err := Load([]byte(`{"pricing":{"gpt-4o":{"input":"2.50","output":10},"default":{"input":"0.10","output":"0.40"}}}`))
	require.NoError(t, err)
	for model, entry := range map[string]string{"gpt-4o": "gpt-4o", "gpt-4o-2024-08-06": "gpt-4o", "openai/gpt-4o": "gpt-4o", "o3": pricing.DefaultName} {
		name, e, ok := rt.PriceEntry(model)
		require.True(t, ok)
		require.Equal(t, entry, name, model)
		want, _ := rt.Price(entry)
		require.Equal(t, want, e, model)
	}
}
