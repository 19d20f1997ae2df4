package main

import (
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
)

// sampleLiteLLM is written for this test in LiteLLM's format: USD per
// token, long-context variants suffixed _above_<N>k_tokens, plus the
// members the converter must skip or note.
const sampleLiteLLM = `{
  "sample_spec": {"max_tokens": "LEGACY parameter", "input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "litellm_provider": "one of https://docs.litellm.ai/docs/providers"},
  "claude-sonnet-4-5": {
    "litellm_provider": "anthropic", "mode": "chat", "max_input_tokens": 200000,
    "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
    "cache_read_input_token_cost": 3e-07, "cache_creation_input_token_cost": 3.75e-06,
    "cache_creation_input_token_cost_above_1hr": 6e-06,
    "input_cost_per_token_above_200k_tokens": 6e-06, "output_cost_per_token_above_200k_tokens": 2.25e-05,
    "cache_read_input_token_cost_above_200k_tokens": 6e-07,
    "supports_prompt_caching": true
  },
  "gpt-4.1-mini": {
    "litellm_provider": "openai", "mode": "chat",
    "input_cost_per_token": 4e-07, "output_cost_per_token": 1.6e-06, "cache_read_input_token_cost": 1e-07,
    "input_cost_per_token_batches": 2e-07, "output_cost_per_token_batches": 8e-07
  },
  "cheap-embedder": {"mode": "embedding", "input_cost_per_token": "3.75e-08", "output_cost_per_token": 0},
  "float-artifact": {"input_cost_per_token": 3.0000000000000004e-07, "output_cost_per_token": 1e-06},
  "dall-e-3": {"mode": "image_generation", "output_cost_per_image": 0.04},
  "two-tiers": {"input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06,
    "input_cost_per_token_above_128k_tokens": 2e-06, "input_cost_per_token_above_200k_tokens": 3e-06}
}`

func price(s string) money.Price {
	p, err := money.ParsePrice(s)
	if err != nil {
		panic(err)
	}
	return p
}

func TestPricingFromLiteLLMConvertsEveryRateExactly(t *testing.T) {
	out, notes, err := pricingFromLiteLLM([]byte(sampleLiteLLM), nil)
	require.NoError(t, err)
	rt, _, err := config.Load(out)
	require.NoError(t, err, "the output is a loadable plugin config:\n%s", out)

	tests := []struct {
		model string
		want  pricing.Entry
	}{
		{"claude-sonnet-4-5", pricing.Entry{
			Base:             pricing.Rates{Input: price("3"), CachedInput: price("0.3"), CacheWrite: price("3.75"), CacheWrite1h: price("6"), Output: price("15")},
			AboveInputTokens: 200_000,
			// LiteLLM has no tier rate for cache writes: they keep the base rates.
			Tier: pricing.Rates{Input: price("6"), CachedInput: price("0.6"), CacheWrite: price("3.75"), CacheWrite1h: price("6"), Output: price("22.5")},
		}},
		{"gpt-4.1-mini", pricing.Entry{
			// No cache-write rate in LiteLLM: the config prices writes as input.
			Base: pricing.Rates{Input: price("0.4"), CachedInput: price("0.1"), CacheWrite: price("0.4"), CacheWrite1h: price("0.4"), Output: price("1.6")},
		}},
		{"cheap-embedder", pricing.Entry{
			Base: pricing.Rates{Input: 37_500_000, CachedInput: 37_500_000, CacheWrite: 37_500_000, CacheWrite1h: 37_500_000},
		}},
		{"float-artifact", pricing.Entry{
			// 3.0000000000000004e-07 USD a token is 0.30000000000000004 per
			// million: rounded up to the next nano-dollar.
			Base: pricing.Rates{Input: 300_000_001, CachedInput: 300_000_001, CacheWrite: 300_000_001, CacheWrite1h: 300_000_001, Output: price("1")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			got, ok := rt.Price(tt.model)
			require.True(t, ok)
			require.Equal(t, tt.want, got)
		})
	}
	for _, skipped := range []string{"sample_spec", "dall-e-3", "two-tiers"} {
		require.NotContains(t, string(out), `"`+skipped+`"`)
	}
	_, ok := rt.Price("dall-e-3")
	require.False(t, ok, "no default is invented")

	all := strings.Join(notes, "\n")
	require.Contains(t, all, "dall-e-3: skipped: no per-token input and output price")
	require.Contains(t, all, "two-tiers: skipped: 2 long-context thresholds")
	require.Contains(t, all, "float-artifact: input_cost_per_token 3.0000000000000004e-07 rounded up to 0.300000001 USD per million tokens")
	require.Contains(t, all, "gpt-4.1-mini: ignores input_cost_per_token_batches, output_cost_per_token_batches")
	require.NotContains(t, all, "claude-sonnet-4-5", "every claude member is converted")
}

func TestPricingFromLiteLLMWritesDecimalStringsNotFloats(t *testing.T) {
	out, _, err := pricingFromLiteLLM([]byte(sampleLiteLLM), []string{"claude-sonnet-4-5"})
	require.NoError(t, err)
	require.Equal(t, `{
  "pricing": {
    "claude-sonnet-4-5": {
      "input": "3.00",
      "cached_input": "0.30",
      "cache_write": "3.75",
      "cache_write_1h": "6.00",
      "output": "15.00",
      "above_input_tokens": 200000,
      "tier": {
        "input": "6.00",
        "cached_input": "0.60",
        "cache_write": "3.75",
        "cache_write_1h": "6.00",
        "output": "22.50"
      }
    }
  }
}
`, string(out))
}

func TestPricingFromLiteLLMCommandReadsAFileAndNamedModels(t *testing.T) {
	f := filepath.Join(t.TempDir(), "model_prices_and_context_window.json")
	require.NoError(t, os.WriteFile(f, []byte(sampleLiteLLM), 0o644))
	code, out, errOut := runCmd(t, "", "pricing-from-litellm", f, "gpt-4.1-mini")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"gpt-4.1-mini"`)
	require.NotContains(t, out, "claude")
	require.Contains(t, errOut, "note: gpt-4.1-mini: ignores")

	code, _, errOut = runCmd(t, sampleLiteLLM, "pricing-from-litellm", "-", "no-such-model")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `model "no-such-model" is not in the LiteLLM file`)

	code, _, errOut = runCmd(t, sampleLiteLLM, "pricing-from-litellm", "-", "two-tiers")
	require.Equal(t, 1, code, "a named model that cannot be converted is an error, not a note")
	require.Contains(t, errOut, "long-context thresholds")

	for _, bad := range []string{`[]`, `{"m":{"input_cost_per_token":-1e-6,"output_cost_per_token":1e-6}}`, `{} {}`} {
		code, _, errOut = runCmd(t, bad, "pricing-from-litellm", "-", "m")
		require.Equal(t, 1, code, bad)
		require.Contains(t, errOut, "error: ")
	}
	code, _, errOut = runCmd(t, "", "pricing-from-litellm")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "usage")
}

func FuzzPerTokenToPerMillionNeverUnderCharges(f *testing.F) {
	for _, s := range []string{"3e-06", "3.0000000000000004e-07", "1e-16", "0", "1e400", "-1", "abc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 {
			return
		}
		p, rounded, err := perTokenToPerMillion(s)
		if err != nil {
			return
		}
		exact, exactErr := money.ParseScaled(s, money.Scale+6)
		if !rounded {
			require.NoError(t, exactErr)
			require.Equal(t, money.Price(exact), p)
			return
		}
		require.ErrorIs(t, exactErr, money.ErrPrecision)
		// Rounded up by less than one unit: p-1 < value × 1e15 ≤ p.
		v, ok := new(big.Rat).SetString(s)
		require.True(t, ok)
		v.Mul(v, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(15), nil)))
		require.Equal(t, 1, new(big.Rat).SetInt64(int64(p)).Cmp(v), "above the exact value (it was not exact)")
		require.Equal(t, -1, new(big.Rat).SetInt64(int64(p)-1).Cmp(v), "by less than one unit")
	})
}
