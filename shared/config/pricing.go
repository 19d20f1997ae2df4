package config

import (
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
)

// DefaultPriceEntry is the pricing entry that prices every model without
// an entry of its own.
const DefaultPriceEntry = "default"

// ModelPrice is one model's entry in the pricing section: USD per million
// tokens of each kind, a fixed price per request, and optionally long-
// context rates for requests whose input is larger than above_input_tokens.
//
// input and output are required. An absent cached_input or cache_write is
// priced as input, and an absent cache_write_1h as cache_write, so a kind
// the operator did not price is never free.
type ModelPrice struct {
	Input        *USD `json:"input,omitempty" desc:"USD per million uncached input tokens (required)"`
	CachedInput  *USD `json:"cached_input,omitempty" desc:"USD per million input tokens read from the prompt cache (default: input)"`
	CacheWrite   *USD `json:"cache_write,omitempty" desc:"USD per million input tokens written to the prompt cache, five-minute lifetime (default: input)"`
	CacheWrite1h *USD `json:"cache_write_1h,omitempty" desc:"USD per million input tokens written to the prompt cache for one hour (default: cache_write)"`
	Output       *USD `json:"output,omitempty" desc:"USD per million output tokens, reasoning included (required)"`
	PerRequest   *USD `json:"per_request,omitempty" desc:"USD added once per priced request"`
	// AboveInputTokens and Tier go together: a request whose whole input
	// (uncached, cached and written) exceeds the threshold is priced at
	// Tier's rates for every kind.
	AboveInputTokens *Int        `json:"above_input_tokens,omitempty" desc:"input-token threshold above which the whole request is priced at tier (> 0, with tier)"`
	Tier             *PriceRates `json:"tier,omitempty" desc:"the rates of requests above above_input_tokens"`
}

// PriceRates are the long-context rates of an entry, USD per million
// tokens; input and output are required, the others fall back as in the
// entry (to this tier's input, and to this tier's cache_write).
type PriceRates struct {
	Input        *USD `json:"input,omitempty" desc:"USD per million uncached input tokens (required)"`
	CachedInput  *USD `json:"cached_input,omitempty" desc:"USD per million cached input tokens (default: this tier's input)"`
	CacheWrite   *USD `json:"cache_write,omitempty" desc:"USD per million five-minute cache-write tokens (default: this tier's input)"`
	CacheWrite1h *USD `json:"cache_write_1h,omitempty" desc:"USD per million one-hour cache-write tokens (default: this tier's cache_write)"`
	Output       *USD `json:"output,omitempty" desc:"USD per million output tokens (required)"`
}

func (c *Config) validatePricing(v *validator) {
	for _, name := range sortedMapKeys(c.Pricing) {
		p := mapPath("pricing", name)
		if name == "" {
			v.add(p, "model name must not be empty")
		}
		m := c.Pricing[name]
		v.requiredRates(p, m.Input, m.Output)
		switch {
		case m.Tier != nil && m.AboveInputTokens == nil:
			v.add(p+".above_input_tokens", "is required with tier (the input-token threshold above which tier applies)")
		case m.Tier == nil && m.AboveInputTokens != nil:
			v.add(p+".tier", "is required with above_input_tokens (the rates above the threshold)")
		case m.AboveInputTokens != nil && *m.AboveInputTokens <= 0:
			v.add(p+".above_input_tokens", "must be greater than 0")
		}
		if m.Tier != nil {
			v.requiredRates(p+".tier", m.Tier.Input, m.Tier.Output)
		}
	}
}

func (v *validator) requiredRates(path string, input, output *USD) {
	if input == nil {
		v.add(path+".input", "is required (USD per million input tokens; 0 is allowed)")
	}
	if output == nil {
		v.add(path+".output", "is required (USD per million output tokens; 0 is allowed)")
	}
}

// compilePricing resolves every fallback into complete pricing entries.
// nil when the section is absent.
func (c *Config) compilePricing() *pricing.Table {
	if c.Pricing == nil {
		return nil
	}
	models := make(map[string]pricing.Entry, len(c.Pricing))
	var def *pricing.Entry
	for name, m := range c.Pricing {
		e := pricing.Entry{
			Base:       rates(m.Input, m.CachedInput, m.CacheWrite, m.CacheWrite1h, m.Output),
			PerRequest: money.Amount(priceOf(m.PerRequest, 0)),
		}
		if m.Tier != nil && m.AboveInputTokens != nil {
			t := m.Tier
			e.AboveInputTokens = int64(*m.AboveInputTokens)
			e.Tier = rates(t.Input, t.CachedInput, t.CacheWrite, t.CacheWrite1h, t.Output)
		}
		if name == DefaultPriceEntry {
			d := e
			def = &d
			continue
		}
		models[name] = e
	}
	return pricing.NewTable(models, def)
}

func rates(input, cached, write, write1h, output *USD) pricing.Rates {
	in := priceOf(input, 0)
	w := priceOf(write, in)
	return pricing.Rates{
		Input:        in,
		CachedInput:  priceOf(cached, in),
		CacheWrite:   w,
		CacheWrite1h: priceOf(write1h, w),
		Output:       priceOf(output, 0),
	}
}
