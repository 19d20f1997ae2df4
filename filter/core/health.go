package core

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/sharedstore"
	"github.com/tokenbudget/tokenbudget/sharedstore/remote"
)

// storeHealth watches the fleet store's admissions so an outage is logged
// once when it starts and once when it ends, not once per request, and the
// rate_limit_store_reachable gauge says which state it is in. A store that
// refuses the filter's token is down too, but its line says so and names the
// setting to fix: no outage ends it, only matching tokens.
type storeHealth struct {
	h        abi.Host
	down     bool
	rejected bool   // the store is down because it refused the token
	gauge    uint32 // id+1 of the gauge, 0 until defined
}

// report records the outcome of one remote admission.
func (sh *storeHealth) report(err error) {
	rejected := errors.Is(err, remote.ErrTokenRejected)
	switch {
	case err != nil && (!sh.down || rejected != sh.rejected):
		sh.down, sh.rejected = true, rejected
		if rejected {
			sh.h.Log(abi.LogError, "tokenbudget: sharedstore rejected the token (401): rate_limiting.redis's token is not "+
				"the one sharedstore was started with (--token-file or SHAREDSTORE_TOKEN); requests fall back or are "+
				"refused as configured until the two match")
		} else {
			sh.h.Log(abi.LogWarn, "tokenbudget: the budget store is unreachable ("+err.Error()+
				"); requests fall back or are refused as configured until it answers again")
		}
		sh.set(0)
	case err == nil && sh.down:
		sh.down, sh.rejected = false, false
		sh.h.Log(abi.LogInfo, "tokenbudget: the budget store answers again")
		sh.set(1)
	case err == nil && sh.gauge == 0:
		sh.set(1)
	}
}

func (sh *storeHealth) set(v uint64) {
	if sh.gauge == 0 {
		id, st := sh.h.DefineMetric(abi.MetricGauge, metrics.StoreReachable)
		if st != abi.StatusOK {
			return
		}
		sh.gauge = id + 1
	}
	sh.h.RecordMetric(sh.gauge-1, v)
}

// watched is a fleet store whose admissions report to a storeHealth.
type watched struct {
	sharedstore.Store
	health *storeHealth
}

func (w watched) Admit(plan limit.Plan, done func(limit.Outcome)) {
	w.Store.Admit(plan, func(o limit.Outcome) {
		w.health.report(o.Err)
		done(o)
	})
}
