package wasmtest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

const spellingsConfig = `{
  "rate_limiting": {
    "limits": { "per_api_key": { "tokens_per_minute": 100000000 }, "per_model": { "gpt-4o": { "tokens_per_minute": 5000 } } },
    "budget_division": { "replicas": 1 }
  },
  "models": { "gpt-4o": { "max_tokens_per_request": 4096 } },
  "pricing": { "gpt-4o": { "input": "2.50", "output": "10.00" }, "default": { "input": "0.10", "output": "0.40" } },
  "api_keys": [ { "key": "sk-a", "id": "a", "spend_limit_day_usd": 1000 } ]
}`

// In the compiled module, every spelling of gpt-4o is priced at gpt-4o's
// entry (with pricing.default 25 times cheaper, a dated snapshot was charged
// $0.00014 instead of $0.0035), spends gpt-4o's per_model budget and meets
// its models.* limit, and the answer and the access log name the entry.
func TestEverySpellingOfAModelIsPricedAndLimitedAsThatModel(t *testing.T) {
	for _, model := range []string{"gpt-4o", "gpt-4o-2024-08-06", "openai/gpt-4o", "GPT-4o", "azure/gpt-4o@2024-11-20"} {
		t.Run(model, func(t *testing.T) {
			x := newHarness(t, spellingsConfig)
			body := `{"model":"` + model + `","max_tokens":390,"messages":[{"role":"user","content":"hello"}]}`
			r := x.do(call{key: "sk-a", body: body, chunks: []string{chatResponse(1000, 100)}})
			require.Equal(t, 200, r.status, string(r.body))
			require.Equal(t, "0.0035", r.decision["spend_usd"], "1,000 in and 100 out at gpt-4o's rates")
			require.Equal(t, "gpt-4o", r.decision["price_entry"])
			require.Equal(t, "gpt-4o", r.decision["model_entry"])
			require.Equal(t, "gpt-4o", r.header("x-spend-price-entry"))

			served := 0
			for i := range 16 {
				if r := x.doOn(i%2, call{key: "sk-a", body: body, chunks: []string{chatResponse(10, 390)}}); r.local {
					require.Equal(t, 429, r.status)
					break
				}
				served++
			}
			require.Equal(t, 9, served, "gpt-4o's 5,000 a minute: 1,100 spent, then 9 × 400")

			big := `{"model":"` + model + `","max_tokens":8000,"messages":[{"role":"user","content":"hello"}]}`
			r = x.do(call{key: "sk-a", body: big, chunks: []string{chatResponse(10, 8000)}})
			require.Equal(t, 400, r.status, "models.gpt-4o.max_tokens_per_request applies")
		})
	}
}

func TestAModelNoEntryMatchesIsPricedAtTheDefault(t *testing.T) {
	x := newHarness(t, spellingsConfig)
	r := x.do(call{key: "sk-a", body: `{"model":"gpt-4omni","max_tokens":390,"messages":[{"role":"user","content":"hello"}]}`,
		chunks: []string{chatResponse(1000, 100)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, "0.00014", r.decision["spend_usd"])
	require.Equal(t, "default", r.decision["price_entry"])
	require.Nil(t, r.decision["model_entry"])
	require.Equal(t, "default", r.header("x-spend-price-entry"))
}
