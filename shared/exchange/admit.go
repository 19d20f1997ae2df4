package exchange

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// admit plans and asks the store. withTokens is false for a request with
// no body at all: it is admitted with no reservation, but it still takes a
// zero-token hold on its token buckets, so any usage the backend reports is
// charged at settlement, and request-count limits still apply. (A body the
// filter cannot estimate holds an estimate from its size: admitUnread.) A
// plan with nothing to check admits at once.
func (x *Exchange) admit(withTokens bool) {
	amount := int64(0)
	if withTokens {
		amount = x.req.Hold()
	}
	// The plan is written where it stays (x.plan, read only once the store
	// answers): in the VM each copy of a Plan is a memory.copy.
	plan := &x.plan
	if !x.spendPlan(&plan.Spend, amount) {
		return
	}
	skipped := x.buffers().planBuf.PlanInto(plan, x.rt, &x.who, amount)
	for _, d := range skipped {
		x.facts.CountSkipped(d)
	}
	x.log.skipped = skipped
	x.planned = amount
	if len(plan.Requests) == 0 && len(plan.Tokens) == 0 && !plan.Spend.Any() {
		x.conclude(OutcomeAdmitted, 0, nil, nil)
		return
	}
	x.ask(plan, false, false)
}

// ask hands plan to the store. An answer the store returns from the call
// is acted on here, after it; otherwise the request waits in
// PhaseAdmitting for the event Admitted. async says the request is paused
// already (ask is within a late answer), so an admission resumes it.
func (x *Exchange) ask(plan *limit.Plan, retry, async bool) {
	o := x.fx.Admit(plan, retry)
	if o == nil {
		x.phase = PhaseAdmitting
		return
	}
	x.answered(o, async)
}

// Admitted is the store's answer to an Admit effect that came after Admit
// returned (a fleet store's callout): the paused request is resumed when
// admitted. An answer for a stream the host already ended gives back what
// it reserved.
func (x *Exchange) Admitted(o *limit.Outcome) {
	if x.phase == PhaseDone {
		if o.Err == nil && o.Admitted() {
			x.hold = o.Hold
			x.fx.Release(&x.hold)
		}
		return
	}
	if x.phase != PhaseAdmitting {
		return // no admission was asked for: nothing to answer
	}
	x.answered(o, true)
}

// answered acts on the store's answer o; async as for ask.
func (x *Exchange) answered(o *limit.Outcome, async bool) {
	for _, f := range o.Skipped {
		x.facts.CountSkipped(f)
		x.log.skipped = append(x.log.skipped, f)
	}
	switch {
	case o.Err == nil && !o.Admitted() && o.SpendRefusal != nil:
		x.spendRefused(*o.SpendRefusal)
	case !o.Admitted() && o.Refusal != nil && x.rt.AnyShadow() && x.rt.Shadow(o.Refusal.Dimension, x.who.Model):
		x.shadowRefused(*o.Refusal, async)
	case o.Err == nil && !o.Admitted() && o.Refusal != nil:
		x.refused(o)
	case o.Err != nil || !o.Admitted():
		// The store could not answer, or answered nonsense: not admitted,
		// yet no refusal and no error. Nothing says the budgets have room,
		// so the request fails closed.
		status, body, headers := refusal.Unavailable(unavailableRetryAfter)
		if errors.Is(o.Err, limit.ErrBucketMapFull) {
			x.log.code = "bucket_map_full" // rate_limiting.on_full_bucket_map "refuse"
		}
		if errors.Is(o.Err, limit.ErrSpendUnavailable) {
			status, body, headers = refusal.SpendUnavailable(unavailableRetryAfter)
		}
		x.conclude(OutcomeUnavailable, status, body, headers)
	default:
		x.admitted(o, async)
	}
}

// admitted records an admission and takes its hold.
func (x *Exchange) admitted(o *limit.Outcome, async bool) {
	x.conclude(OutcomeAdmitted, 0, nil, nil)
	x.hold, x.levels, x.spendUsed = o.Hold, o.Levels, o.Spend
	if len(o.Hold.Entries) > 0 || o.Hold.Spend.Any() {
		x.held = holdOpen
	}
	x.log.hold = o.Hold.Reserved()
	x.log.fellBack = x.env.Fleet && o.Hold.Backend == limit.BackendLocal
	for i := range x.hold.Entries {
		e := &x.hold.Entries[i]
		x.facts.CountTokens(e, TokensReserved, e.Amount)
	}
	if async {
		x.fx.ResumeRequest()
	}
}

// refused answers a budget refusal: 429 with the refusing limit's headers.
func (x *Exchange) refused(o *limit.Outcome) {
	x.refusal = *o.Refusal
	r := &x.refusal
	x.log.limitType, x.log.dimension = refusal.LimitType(r.Kind, r.Budget), r.Dimension.String()
	now := x.env.Now() / 1e9
	status, body, headers := refusal.Refusal(*r, o.Levels, now)
	if x.rt.OpenAIHeaders || x.rt.IETFHeaders {
		own := o.Levels
		if r.Private {
			own = append(own[:len(own):len(own)], limit.OpLevel{Kind: r.Kind,
				Dimension: r.Dimension, Budget: r.Budget, Level: r.Level})
		}
		headers = refusal.AppendCompatHeaders(headers, own, x.headerStyles(), now)
	}
	x.conclude(OutcomeRefused, status, body, headers)
}

func (x *Exchange) headerStyles() refusal.Styles {
	return refusal.Styles{OpenAI: x.rt.OpenAIHeaders, IETF: x.rt.IETFHeaders}
}

// shadowRefused handles a refusal by a dimension in shadow mode
// (rate_limiting.mode or the dimension's own mode "shadow"): the refusal is
// counted and logged, and the request is admitted on the plan without that
// dimension, so the other dimensions still decide (an enforced one may
// still refuse, a shadowed one is counted in turn). The shadowed
// dimension's buckets are left as an enforced refusal would have left them,
// and every admitted request settles as usual: the counts an operator
// watches are the ones enforcement would produce.
func (x *Exchange) shadowRefused(r limit.Refusal, async bool) {
	limitType := refusal.LimitType(r.Kind, r.Budget)
	x.facts.CountShadowRefusal(limitType, r.Dimension.String())
	x.log.shadow = append(x.log.shadow, shadowRefusal{limitType: limitType, dimension: r.Dimension.String()})
	x.plan = withoutDimension(x.plan, r.Dimension, r.Kind == limit.KindTokens)
	if len(x.plan.Requests) == 0 && len(x.plan.Tokens) == 0 {
		x.conclude(OutcomeAdmitted, 0, nil, nil)
		if async {
			x.fx.ResumeRequest()
		}
		return
	}
	x.ask(&x.plan, true, async)
}

// withoutDimension is p less every op of dimension. After a token refusal
// the request-count units of the other dimensions are already consumed (a
// store keeps them on a token refusal), so they are not asked for again;
// concurrency units were given back and are.
func withoutDimension(p limit.Plan, dimension limit.Dimension, tokenRefusal bool) limit.Plan {
	out := limit.Plan{Overage: p.Overage}
	for _, op := range p.Requests {
		if op.Dimension == dimension || tokenRefusal && op.Kind == limit.KindRequests {
			continue
		}
		out.Requests = append(out.Requests, op)
	}
	for _, op := range p.Tokens {
		if op.Dimension != dimension {
			out.Tokens = append(out.Tokens, op)
		}
	}
	return out
}

// spendPlan is the spend part of this request's admission: the limits that
// apply to its identity and the UTC periods of its start (now). ok false
// means the request was answered here: a model the price list cannot price
// while a limit applies (400 model_not_priced: charging it $0 would let it
// past every limit), or a clock before 1970 (503: no period to count in).
// With no limit in force the plan is zero and the store skips spend.
//
// hold is the token figure the request holds (its input estimate and
// output ceiling): priced as input up to the estimate and output the rest,
// it is the most the request can cost, which the store reserves on every
// limited counter (unless spend_limits.reserve is false).
func (x *Exchange) spendPlan(sp *limit.Spend, hold int64) (ok bool) {
	// Cleared only when set: a spend plan is zero exactly when it is not
	// Any, and in the VM zeroing one is a memory.fill.
	if sp.Any() {
		*sp = limit.Spend{}
	}
	fleet := x.rt.FleetSpend()
	if !x.rt.HasSpendLimits() && !fleet {
		return true
	}
	p := x.rt.SpendPolicy(x.who.Key, x.who.User, x.who.Team)
	if !p.Any() && !fleet {
		return true
	}
	name, entry, priced := x.rt.PriceEntry(x.who.Model)
	if !priced {
		x.log.code = "model_not_priced"
		status, body, headers := refusal.ModelNotPriced(x.who.Model)
		x.conclude(OutcomeInvalid, status, body, headers)
		return false
	}
	start := x.env.Now()
	day, month, valid := calendar.Both(start)
	if !valid {
		status, body, headers := refusal.SpendUnavailable(unavailableRetryAfter)
		x.conclude(OutcomeUnavailable, status, body, headers)
		return false
	}
	x.price, x.log.priceEntry = entry, name
	sp.Policy, sp.Day, sp.Month, sp.Start, sp.Model, sp.Fleet = p, day, month, start, x.who.Model, fleet
	if x.rt.SpendReserve() {
		sp.Reserve = pricing.Cost(x.kindsOf(hold), entry)
	}
	return true
}

// spendRefused answers a spend limit's 429 (no Retry-After: waiting until
// period_end is the only remedy).
func (x *Exchange) spendRefused(ex spend.Exceeded) {
	x.spendRefusal = ex
	x.log.limitType = refusal.LimitSpend
	x.log.spendSlot = ex.Slot
	x.log.spendRefused = true
	status, body, headers := refusal.SpendRefusal(ex, x.plan.Spend.Window(ex.Slot).End)
	x.conclude(OutcomeRefused, status, body, headers)
}
