package core

import (
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/usage"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// spendPlan is the spend part of this request's admission: the limits that
// apply to its identity and the UTC periods of its start (now). ok false
// means the request was answered here: a model the price list cannot price
// while a limit applies (400 model_not_priced: charging it $0 would let it
// past every limit), or a clock before 1970 (503: no period to count in).
// With no limit in force the plan is zero and the store skips spend.
func (s *Stream) spendPlan() (sp sharedstore.Spend, ok bool) {
	fleet := s.rt.FleetSpend()
	if !s.rt.HasSpendLimits() && !fleet {
		return sp, true
	}
	p := s.rt.SpendPolicy(s.who.Key, s.who.User, s.who.Team)
	if !p.Any() && !fleet {
		return sp, true
	}
	entry, priced := s.rt.Price(s.who.Model)
	if !priced {
		s.root.metrics.request("invalid")
		s.log.outcome, s.log.code = "invalid", "model_not_priced"
		status, body, headers := refusal.ModelNotPriced(s.who.Model)
		s.reply(status, body, headers)
		return sp, false
	}
	start := s.host().NowNanos()
	day, month, valid := calendar.Both(start)
	if !valid {
		s.root.metrics.request("unavailable")
		s.log.outcome = "unavailable"
		status, body, headers := refusal.SpendUnavailable(unavailableRetryAfter)
		s.reply(status, body, headers)
		return sp, false
	}
	s.price = entry
	return sharedstore.Spend{Policy: p, Day: day, Month: month, Start: start, Model: s.who.Model, Fleet: fleet}, true
}

// spendRefused answers a spend limit's 429 (no Retry-After: waiting until
// period_end is the only remedy).
func (s *Stream) spendRefused(ex spend.Exceeded) {
	s.root.metrics.request("refused")
	s.root.metrics.spendRefusal(ex)
	s.log.outcome, s.log.limitType = "refused", refusal.LimitSpend
	s.log.spendSlot = ex.Slot
	s.log.spendRefused = true
	status, body, headers := refusal.SpendRefusal(ex, s.plan.Spend.Window(ex.Slot).End)
	s.reply(status, body, headers)
}

// chargeSpend prices what the settlement charges and puts the cost on the
// hold for the store's postflight.
func (s *Stream) chargeSpend(k usage.Kinds) {
	if !s.hold.Spend.Any() {
		return
	}
	cost := pricing.Cost(k, s.price)
	s.hold.SpendCost, s.hold.SpendUsage = cost, k
	s.log.spend, s.log.spendCharged = cost, true
	s.root.metrics.spendUSD(&s.hold.Spend.Policy, cost)
}

// kindsOf splits a token figure the filter charges without the backend's
// usage (a hold, an estimate plus counted deltas) into input, at most the
// request's input estimate, and output, the rest.
func (s *Stream) kindsOf(total int64) usage.Kinds {
	in := min(max(s.req.Input, 0), max(total, 0))
	return usage.Kinds{Input: in, Output: max(total, 0) - in}
}

// spendRefusal counts a spend refusal: rate_limit_exceeded_total with
// limit_type spend_limit, and the per-scope-and-period family.
// A balance refusal is counted with scope team and period balance.
func (m *metricSet) spendRefusal(ex spend.Exceeded) {
	m.count(mk(metrics.Exceeded, metrics.LabelLimitType, refusal.LimitSpend), 1)
	scope, period := ex.Slot.Scope().String(), ex.Slot.Period().String()
	if ex.Balance {
		scope, period = spend.Team.String(), "balance"
	}
	m.count(mk(metrics.SpendRefusals, metrics.LabelScope, scope, metrics.LabelPeriod, period), 1)
}

// spendUSD adds a request's cost (nano-USD) once to each scope it is
// counted under.
func (m *metricSet) spendUSD(p *spend.Policy, cost money.Amount) {
	if cost <= 0 {
		return
	}
	var seen [4]bool
	for slot := spend.Slot(0); slot < spend.NumSlots; slot++ {
		sc := slot.Scope()
		if !p.Limits[slot].Set || int(sc) >= len(seen) || seen[sc] {
			continue
		}
		seen[sc] = true
		m.count(mk(metrics.SpendUSD, metrics.LabelScope, sc.String()), int64(cost))
	}
}
