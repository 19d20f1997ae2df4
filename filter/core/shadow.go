package core

import (
	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// shadowRefused handles a refusal by a dimension in shadow mode
// (rate_limiting.mode or the dimension's own mode "shadow"): the refusal is
// counted and logged, and the request is admitted on the plan without that
// dimension, so the other dimensions still decide (an enforced one may
// still refuse, a shadowed one is counted in turn). The shadowed
// dimension's buckets are left as an enforced refusal would have left them,
// and every admitted request settles as usual: the counts an operator
// watches are the ones enforcement would produce.
func (s *Stream) shadowRefused(r sharedstore.Refusal) {
	limitType := refusal.LimitType(r.Kind, r.Budget)
	s.root.metrics.shadowRefusal(limitType, r.Dimension.String())
	s.log.shadow = append(s.log.shadow, shadowRefusal{limitType: limitType, dimension: r.Dimension.String()})
	s.plan = withoutDimension(s.plan, r.Dimension, r.Kind == sharedstore.KindTokens)
	if len(s.plan.Requests) == 0 && len(s.plan.Tokens) == 0 {
		s.root.metrics.request(outcomeAdmitted)
		s.log.outcome = outcomeAdmitted
		if !s.admitting {
			s.host().ContinueStream(abi.StreamRequest)
		}
		return
	}
	s.decided = false
	s.store.Admit(s.plan, s.onAdmitted)
}

// withoutDimension is p less every op of dimension. After a token refusal
// the request-count units of the other dimensions are already consumed (a
// store keeps them on a token refusal), so they are not asked for again;
// concurrency units were given back and are.
func withoutDimension(p sharedstore.Plan, dimension sharedstore.Dimension, tokenRefusal bool) sharedstore.Plan {
	out := sharedstore.Plan{Overage: p.Overage}
	for _, op := range p.Requests {
		if op.Dimension == dimension || tokenRefusal && op.Kind == sharedstore.KindRequests {
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
