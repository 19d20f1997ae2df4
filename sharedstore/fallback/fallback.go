// Package fallback decides what a request gets when the fleet-wide store
// cannot answer (rate_limiting.redis.fallback_to_memory): true admits on the
// replica-local buckets, false keeps the error so the filter answers 503
// with Retry-After: 5. Either way every hold ends on the store that made it.
//
// This package is compiled into the .wasm: no fmt, os, time or encoding/json
// (each links syscall, whose init Envoy traps), no goroutines; a test pins it.
package fallback

import (
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// Actions passed to onUnavailable: the action label of
// rate_limit_redis_unavailable_total.
const (
	ActionFallback = "fallback"
	ActionReject   = "reject"
)

type store struct {
	remote, local    sharedstore.Store
	fallbackToMemory bool
	onUnavailable    func(dimension limit.Dimension, action string)
	localPlan        func(limit.Plan) limit.Plan
	keeper           SpendKeeper
	records          Recorder
}

// SpendKeeper keeps the fleet store's last spend verdict per identity
// (the local store does, in shared data) and, on a plan with Spend.Recall,
// admits against it.
type SpendKeeper interface {
	RememberSpend(sp *limit.Spend, o *limit.Outcome)
}

// Recorder delivers the inference record of a hold the fleet store never
// held (the remote store queues it like a settlement), so the ledger
// counts what was admitted during an outage.
type Recorder interface {
	Record(h limit.Hold)
}

// Option adds to what New builds.
type Option func(*store)

// Remember makes every spend verdict the remote store gives k's to keep,
// and marks fallback plans (Spend.Recall) so the local store admits
// against what the last verdicts left: an exhausted limit stays refused
// through an outage, and what remained is reserved against, not restarted
// from $0 on each replica.
func Remember(k SpendKeeper) Option { return func(s *store) { s.keeper = k } }

// Records sends the inference record of every hold settled on the local
// store that has a spend part to r, which delivers it once the fleet store
// answers again.
func Records(r Recorder) Option { return func(s *store) { s.records = r } }

// New wraps a remote and a local store. onUnavailable (may be nil) is called
// once per distinct dimension label of the plan's ops (requests then tokens,
// first occurrence order) each time the remote store fails an admission: the
// metric counts which budgets went unenforced fleet-wide, and a dimension
// with both a request-count and a token op is one budget owner, not two.
//
// localPlan (may be nil: the plan as it is) turns the fleet plan into the
// one the local buckets enforce, the token budgets divided to this replica's
// share: without it, every replica in fallback admits the whole fleet
// budget, so an outage multiplies the budget by the number of replicas. It
// runs only when the remote store failed, so the normal path pays nothing.
func New(remote, local sharedstore.Store, fallbackToMemory bool, onUnavailable func(dimension limit.Dimension, action string),
	localPlan func(limit.Plan) limit.Plan, opts ...Option) sharedstore.Store {
	s := &store{remote: remote, local: local, fallbackToMemory: fallbackToMemory, onUnavailable: onUnavailable, localPlan: localPlan}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *store) Admit(plan limit.Plan, done func(limit.Outcome)) {
	s.remote.Admit(plan, func(o limit.Outcome) {
		if o.Err == nil {
			if s.keeper != nil && s.fallbackToMemory && plan.Spend.Any() {
				s.keeper.RememberSpend(&plan.Spend, &o)
			}
			done(o)
			return
		}
		action := ActionReject
		if s.fallbackToMemory {
			action = ActionFallback
		}
		s.report(plan, action)
		if !s.fallbackToMemory {
			done(limit.Outcome{Err: o.Err})
			return
		}
		if s.localPlan != nil {
			plan = s.localPlan(plan)
		}
		if s.keeper != nil && plan.Spend.Any() {
			plan.Spend.Recall = true
		}
		s.local.Admit(plan, done)
	})
}

func (s *store) report(plan limit.Plan, action string) {
	if s.onUnavailable == nil {
		return
	}
	var seen uint64 // one bit per dimension value
	for _, group := range [2][]limit.Op{plan.Requests, plan.Tokens} {
		for _, op := range group {
			bit := uint64(1) << (op.Dimension % 64)
			if seen&bit != 0 {
				continue
			}
			seen |= bit
			s.onUnavailable(op.Dimension, action)
		}
	}
}

// Settle and Release go to the store that holds the hold: a reservation
// taken locally during an outage is never ended on Redis, which never held
// it. A hold with no backend (nothing reserved) is ignored.
func (s *store) Settle(h limit.Hold, actual int64) {
	switch h.Backend {
	case limit.BackendRemote:
		s.remote.Settle(h, actual)
	case limit.BackendLocal:
		s.local.Settle(h, actual)
		if s.records != nil && h.Spend.Any() {
			s.records.Record(h)
		}
	}
}

func (s *store) Release(h limit.Hold) {
	switch h.Backend {
	case limit.BackendRemote:
		s.remote.Release(h)
	case limit.BackendLocal:
		s.local.Release(h)
	}
}
