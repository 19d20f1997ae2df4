package core

import (
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// CountSpendRefusal counts a spend refusal: rate_limit_exceeded_total with
// limit_type spend_limit, and the per-scope-and-period family.
// A balance refusal is counted with scope team and period balance.
func (m *metricSet) CountSpendRefusal(ex spend.Exceeded) {
	m.count(mk(metrics.Exceeded, metrics.LabelLimitType, refusal.LimitSpend), 1)
	scope, period := ex.Slot.Scope().String(), ex.Slot.Period().String()
	if ex.Balance {
		scope, period = spend.Team.String(), "balance"
	}
	m.count(mk(metrics.SpendRefusals, metrics.LabelScope, scope, metrics.LabelPeriod, period), 1)
}

// CountSpendUSD adds a request's cost (nano-USD) once to each scope it is
// counted under.
func (m *metricSet) CountSpendUSD(p *spend.Policy, cost money.Amount) {
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
