package exchange

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// A spelling a provider serves as one model (a dated snapshot, a provider
// prefix, another case) is priced, budgeted and limited as the entry it
// resolves to, and the success headers and the decision record name that
// entry; only a model no entry matches takes the default price.
func TestAModelsSpellingsArePricedAndLimitedAsItsEntry(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000000},` +
		`"per_model":{"gpt-4o":{"tokens_per_minute":50000}}}},` +
		`"models":{"gpt-4o":{"max_tokens_per_request":4096}},` +
		`"pricing":{"gpt-4o":{"input":"2.50","output":"10.00"},"default":{"input":"0.10","output":"0.40"}},` +
		`"api_keys":[{"key":"sk-a","id":"a","spend_limit_day_usd":5}]}`
	for _, c := range []struct {
		rule, model, entry, priced, cost string
	}{
		{"the entry's own name", "gpt-4o", "gpt-4o", "gpt-4o", "3500000"},
		{"a dated snapshot", "gpt-4o-2024-08-06", "gpt-4o", "gpt-4o", "3500000"},
		{"a provider prefix", "openai/gpt-4o", "gpt-4o", "gpt-4o", "3500000"},
		{"another letter case", "GPT-4o-2024-11-20", "gpt-4o", "gpt-4o", "3500000"},
		// 1000 × $0.10/M + 100 × $0.40/M.
		{"a model no entry matches takes the default", "gpt-4omni", "", "default", "140000"},
	} {
		t.Run(c.rule, func(t *testing.T) {
			r := newRig(t, cfg)
			body := `{"model":"` + c.model + `","max_tokens":5000,"messages":[{"role":"user","content":"hi"}]}`
			r.send(chat(body))
			fx := strings.Join(r.drain(), "\n")
			if c.entry != "" {
				require.Contains(t, fx, "local_reply 400", "models.gpt-4o.max_tokens_per_request applies to %s", c.model)
			} else {
				require.NotContains(t, fx, "local_reply", "no model limit applies to %s", c.model)
			}
		})
		t.Run(c.rule+", within the model's limits", func(t *testing.T) {
			r := newRig(t, cfg)
			body := `{"model":"` + c.model + `","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
			r.send(chat(body))
			r.admitAll(false)
			r.drain()
			var modelKey string
			for _, op := range r.admitted.Tokens {
				if op.Dimension == limit.DimModel {
					modelKey = op.Key
				}
			}
			if c.entry != "" {
				require.True(t, strings.HasSuffix(modelKey, "|"+c.entry), "the per_model bucket is the entry's: %q", modelKey)
			} else {
				require.Empty(t, modelKey, "no per_model budget applies")
			}
			r.respond(jsonOK(), `{"usage":{"prompt_tokens":1000,"completion_tokens":100}}`)
			fx := strings.Join(r.drain(SetResponseHeaders, CountSpendUSD), "\n")
			require.Contains(t, fx, "x-spend-price-entry="+c.priced)
			require.Contains(t, fx, "count_spend_usd "+c.cost)
			r.x.Log()
			rec := r.drain(RecordDecision)[0]
			require.Contains(t, rec, `"price_entry":"`+c.priced+`"`)
			if c.entry != "" {
				require.Contains(t, rec, `"model_entry":"`+c.entry+`"`)
			} else {
				require.NotContains(t, rec, `"model_entry"`)
			}
		})
	}
}
