// Package pricing turns a response's usage into what it cost, in the
// integer unit of package money.
//
// A price entry holds USD per million tokens for each kind of token
// (uncached input, cached input, five-minute and one-hour cache writes,
// output), optionally a second set of rates for requests whose input
// exceeds a threshold (long-context pricing), and a fixed price per
// request. The cost of one request is
//
//	ceil(Σ tokens(kind) × rate(kind) / 1,000,000) + per_request
//
// in nano-USD: the products are exact 128-bit integers and the sum is
// rounded up once, so a request never costs less than its usage at the
// listed rates and the rounding adds less than one nano-dollar per request
// (rounding each kind would add up to five). A cost past the int64 range
// saturates at money.Max.
//
// Compiled into the .wasm: math/bits only.
package pricing

import (
	"math"
	"math/bits"

	"github.com/tokenbudget/tokenbudget/shared/modelname"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// Rates are the per-million-token prices of each kind of token.
type Rates struct {
	Input, CachedInput, CacheWrite, CacheWrite1h, Output money.Price
}

// Entry prices one model. Its rates are complete: the configuration has
// already filled a rate the operator left out from the one it falls back to.
type Entry struct {
	Base Rates
	// AboveInputTokens, when positive, switches a request whose whole input
	// (uncached, cached and written) is larger than it to Tier for every
	// kind, as long-context price lists do.
	AboveInputTokens int64
	Tier             Rates
	// PerRequest is added once to every priced request.
	PerRequest money.Amount
}

// RatesFor is the set of rates a request with this usage is priced at.
func (e Entry) RatesFor(k tokens.Kinds) Rates {
	if e.AboveInputTokens > 0 && inputTokens(k) > uint64(e.AboveInputTokens) {
		return e.Tier
	}
	return e.Base
}

func inputTokens(k tokens.Kinds) uint64 {
	return nonNeg(k.Input) + nonNeg(k.CachedInput) + nonNeg(k.CacheWrite) + nonNeg(k.CacheWrite1h)
}

// Cost is what a request with usage k costs at entry e, in nano-USD,
// rounded up once (see the package doc).
func Cost(k tokens.Kinds, e Entry) money.Amount {
	r := e.RatesFor(k)
	var sum u128
	sum.addProduct(nonNeg(k.Input), nonNeg(int64(r.Input)))
	sum.addProduct(nonNeg(k.CachedInput), nonNeg(int64(r.CachedInput)))
	sum.addProduct(nonNeg(k.CacheWrite), nonNeg(int64(r.CacheWrite)))
	sum.addProduct(nonNeg(k.CacheWrite1h), nonNeg(int64(r.CacheWrite1h)))
	sum.addProduct(nonNeg(k.Output), nonNeg(int64(r.Output)))
	sum.addProduct(nonNeg(int64(e.PerRequest)), perMillion)
	return sum.ceilDivMillion()
}

const perMillion = 1_000_000

func nonNeg(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

// u128 is an unsigned 128-bit sum that saturates instead of wrapping.
type u128 struct{ hi, lo uint64 }

func (s *u128) addProduct(a, b uint64) {
	hi, lo := bits.Mul64(a, b)
	var c uint64
	s.lo, c = bits.Add64(s.lo, lo, 0)
	s.hi, c = bits.Add64(s.hi, hi, c)
	if c != 0 {
		s.hi, s.lo = math.MaxUint64, math.MaxUint64
	}
}

// ceilDivMillion is ceil(s / 1e6) as an Amount, saturating at money.Max.
func (s u128) ceilDivMillion() money.Amount {
	if s.hi >= perMillion {
		return money.Max // the quotient needs more than 64 bits
	}
	q, rem := bits.Div64(s.hi, s.lo, perMillion)
	if rem != 0 {
		q++ // q < 2^64 - 1 here: s < 1e6 × 2^64
	}
	if q > math.MaxInt64 {
		return money.Max
	}
	return money.Amount(q)
}

// Table is a compiled price list: entries by model name, resolved as
// package modelname resolves a client's spelling, and an optional default
// entry for every other model.
type Table struct {
	models     map[string]Entry
	names      *modelname.Set
	def        Entry
	hasDefault bool
}

// DefaultName is the name Resolve gives the default entry.
const DefaultName = "default"

// NewTable builds a table; def nil means no default (unknown models are
// not priced).
func NewTable(models map[string]Entry, def *Entry) *Table {
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	t := &Table{models: models, names: modelname.New(names)}
	if def != nil {
		t.def, t.hasDefault = *def, true
	}
	return t
}

// Lookup is the entry pricing model: the one its spelling resolves to,
// else the default. ok is false when neither exists, so the caller can
// refuse (model_not_priced) rather than charge nothing. A nil Table prices
// nothing.
func (t *Table) Lookup(model string) (e Entry, ok bool) {
	_, e, ok = t.Resolve(model)
	return e, ok
}

// Resolve is Lookup with the name of the entry used: the configured model
// name, or DefaultName.
func (t *Table) Resolve(model string) (name string, e Entry, ok bool) {
	if t == nil {
		return "", Entry{}, false
	}
	if m, found := t.models[model]; found {
		return model, m, true
	}
	if n, found := t.names.Resolve(model); found {
		return n, t.models[n], true
	}
	if t.hasDefault {
		return DefaultName, t.def, true
	}
	return "", Entry{}, false
}

// HasDefault reports whether unknown models are priced.
func (t *Table) HasDefault() bool { return t != nil && t.hasDefault }

// Len is the number of models priced by name.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.models)
}
