//go:build !wasip1

package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// pricesBody is PUT /v1/admin/prices: the filter's pricing section, read
// and validated by the plugin config's own code (so a list the filter
// would refuse is refused here with the same message), and the instant it
// takes effect from. Calls started at or after effective_from are charged
// at it until a later list; records already charged keep their charge.
type pricesBody struct {
	effectiveFrom time.Time
	models        map[string]pricing.Entry
	def           *pricing.Entry
}

func decodePrices(body []byte) (pb pricesBody, err error) {
	var from string
	var section []byte
	err = decodeObject(body,
		member{name: "effective_from", required: true, read: text(&from)},
		member{name: "pricing", required: true, read: func(v jsonx.Value) error {
			if v.Kind != jsonx.Object {
				return errors.New("must be an object: the filter's pricing section, model name to prices")
			}
			section = v.Raw
			return nil
		}})
	if err != nil {
		return pb, err
	}
	if pb.effectiveFrom, err = time.Parse(time.RFC3339Nano, from); err != nil {
		return pb, fmt.Errorf("effective_from %s: must be an RFC 3339 time such as 2026-10-01T00:00:00Z", quote(from))
	}
	pb.effectiveFrom = pb.effectiveFrom.UTC()
	if pb.effectiveFrom.Year() < 1970 || pb.effectiveFrom.Year() > 9999 {
		return pb, fmt.Errorf("effective_from %s: must lie between 1970 and 9999", quote(from))
	}
	doc := append(append([]byte(`{"pricing":`), section...), '}')
	c, err := config.Check(doc)
	if err != nil {
		msg := strings.NewReplacer("parse plugin config: ", "", "invalid plugin config: ", "").Replace(err.Error())
		return pb, errors.New(strings.ReplaceAll(msg, "\n", "; "))
	}
	rt, err := c.Compile()
	if err != nil {
		return pb, err
	}
	if len(c.Pricing) == 0 {
		return pb, errors.New("pricing: lists no model")
	}
	pb.models = make(map[string]pricing.Entry, len(c.Pricing))
	for name := range c.Pricing {
		e, _ := rt.Price(name) // every listed name is priced
		if name == config.DefaultPriceEntry {
			d := e
			pb.def = &d
			continue
		}
		pb.models[name] = e
	}
	return pb, nil
}

// ratesJSON and modelPriceJSON write a stored entry back in the pricing
// section's own format, every rate spelled out (a fallback the operator
// left out is written as the rate it resolved to), so a listed price list
// can be put again as it is.
type ratesJSON struct {
	Input        string `json:"input"`
	CachedInput  string `json:"cached_input"`
	CacheWrite   string `json:"cache_write"`
	CacheWrite1h string `json:"cache_write_1h"`
	Output       string `json:"output"`
}

type modelPriceJSON struct {
	ratesJSON
	PerRequest       string     `json:"per_request,omitempty"`
	AboveInputTokens int64      `json:"above_input_tokens,omitempty"`
	Tier             *ratesJSON `json:"tier,omitempty"`
}

type priceListJSON struct {
	ID            int64                     `json:"id"`
	EffectiveFrom string                    `json:"effective_from"`
	InEffect      bool                      `json:"in_effect"`
	Pricing       map[string]modelPriceJSON `json:"pricing"`
}

func ratesOf(r pricing.Rates) ratesJSON {
	return ratesJSON{Input: r.Input.String(), CachedInput: r.CachedInput.String(), CacheWrite: r.CacheWrite.String(),
		CacheWrite1h: r.CacheWrite1h.String(), Output: r.Output.String()}
}

func entryOf(e pricing.Entry) modelPriceJSON {
	m := modelPriceJSON{ratesJSON: ratesOf(e.Base)}
	if e.PerRequest != 0 {
		m.PerRequest = e.PerRequest.String()
	}
	if e.AboveInputTokens > 0 {
		t := ratesOf(e.Tier)
		m.AboveInputTokens, m.Tier = e.AboveInputTokens, &t
	}
	return m
}

func listOf(id int64, from time.Time, models map[string]pricing.Entry, def *pricing.Entry) priceListJSON {
	out := priceListJSON{ID: id, EffectiveFrom: from.UTC().Format(time.RFC3339Nano), Pricing: map[string]modelPriceJSON{}}
	for name, e := range models {
		out.Pricing[name] = entryOf(e)
	}
	if def != nil {
		out.Pricing[config.DefaultPriceEntry] = entryOf(*def)
	}
	return out
}

func (s *Server) putPrices(ctx context.Context, _ *http.Request, body []byte) (int, any) {
	pb, err := decodePrices(body)
	if err != nil {
		return fail(http.StatusBadRequest, err.Error())
	}
	id, err := s.ledger.PutPrices(ctx, pb.effectiveFrom, pb.models, pb.def)
	switch {
	case errors.Is(err, ledger.ErrPricesExist):
		return fail(http.StatusConflict, "a price list already takes effect at "+pb.effectiveFrom.Format(time.RFC3339Nano)+
			"; lists are never replaced (charged calls cite them): put the corrected list at a later instant")
	case err != nil:
		return s.ledgerFailed("put prices", err)
	}
	s.log.Info("admin: price list put", "id", id, "effective_from", pb.effectiveFrom, "models", len(pb.models), "default", pb.def != nil)
	// Prices change no cached figure: the worker charges with them.
	return http.StatusOK, listOf(id, pb.effectiveFrom, pb.models, pb.def)
}

func (s *Server) listPrices(ctx context.Context, _ *http.Request, _ []byte) (int, any) {
	lists, err := s.ledger.Prices(ctx)
	if err != nil {
		return s.ledgerFailed("list prices", err)
	}
	now := s.now()
	out := struct {
		PriceLists []priceListJSON `json:"price_lists"`
	}{PriceLists: make([]priceListJSON, 0, len(lists))}
	current := -1 // the last list in effect now
	for i, l := range lists {
		out.PriceLists = append(out.PriceLists, listOf(l.ID, l.EffectiveFrom, l.Models, l.Default))
		if !l.EffectiveFrom.After(now) {
			current = i
		}
	}
	if current >= 0 {
		out.PriceLists[current].InEffect = true
	}
	return http.StatusOK, out
}
