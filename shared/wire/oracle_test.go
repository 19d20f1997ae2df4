package wire

import (
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// The wire's structs as encoding/json sees them are the oracle the
// hand-written encoders are held to; these conversions build them.

// FromPlan converts a plan to its wire form.
func FromPlan(p limit.Plan) AdmitRequest {
	return AdmitRequest{Requests: fromOps(p.Requests), Tokens: fromOps(p.Tokens), Overage: overageName(p.Overage), Spend: FromSpend(p.Spend)}
}

// overageName is a rule's wire value: debt, the default, travels as absence.
func overageName(o limit.Overage) string {
	if o == limit.OverageSkip {
		return OverageSkip
	}
	return ""
}

func fromOps(ops []limit.Op) []Op {
	if len(ops) == 0 {
		return nil
	}
	out := make([]Op, len(ops))
	for i, o := range ops {
		ls := make([]Limit, len(o.Limits))
		for j, l := range o.Limits {
			ls[j] = Limit{Budget: l.Budget, Capacity: l.Capacity, RefillPerSec: l.RefillPerSec}
		}
		out[i] = Op{Key: o.Key, Kind: o.Kind, Dimension: o.Dimension, Limits: ls, Amount: o.Amount, Private: o.Private}
	}
	return out
}

// VerdictOf is the verdict for an outcome of a plan whose spend part the
// service checked (used is the usage it read).
func VerdictOf(o limit.Outcome, p *spend.Policy) *SpendVerdict {
	v := &SpendVerdict{Checked: true}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if p.Limits[s].Set {
			v.Usage = append(v.Usage, SpendUsage{Slot: s.String(), UsedNanoUSD: int64(o.Spend[s])})
		}
	}
	if ex := o.SpendRefusal; ex != nil {
		v.Refusal = &SpendExceeded{Slot: ex.Slot.String(), LimitNanoUSD: int64(ex.Limit), UsedNanoUSD: int64(ex.Used)}
	}
	return v
}
