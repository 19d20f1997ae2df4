package wire

import "github.com/tokenbudget/tokenbudget/shared/limit"

// OverageRule reads a wire value; anything but "skip" is the default, debt
// (Validate refuses values that are neither).
func OverageRule(s string) limit.Overage {
	if s == OverageSkip {
		return limit.OverageSkip
	}
	return limit.OverageDebt
}

// Plan converts the wire form back to a plan.
func (r AdmitRequest) Plan() limit.Plan {
	sp, _ := r.Spend.Spend() // Validate refuses a spend part that does not convert
	return limit.Plan{Requests: toOps(r.Requests), Tokens: toOps(r.Tokens), Overage: OverageRule(r.Overage), Spend: sp}
}

func toOps(ops []Op) []limit.Op {
	if len(ops) == 0 {
		return nil
	}
	out := make([]limit.Op, len(ops))
	for i, o := range ops {
		out[i] = limit.Op{Key: o.Key, Kind: o.Kind, Dimension: o.Dimension, Limits: toLimits(o.Limits), Amount: o.Amount, Private: o.Private}
	}
	return out
}

func toLimits(ls []Limit) []limit.Limit {
	out := make([]limit.Limit, len(ls))
	for j, l := range ls {
		out[j] = limit.Limit{Budget: l.Budget, Capacity: l.Capacity, RefillPerSec: l.RefillPerSec}
	}
	return out
}

// FromOutcome converts an admission outcome to its response; the hold id
// travels in Hold and the entries stay with the server.
func FromOutcome(o limit.Outcome) AdmitResponse {
	r := AdmitResponse{Admitted: o.Admitted(), Hold: o.Hold.ID, Skipped: o.Skipped}
	if o.Refusal != nil {
		f := o.Refusal
		r.Refusal = &Refusal{Kind: f.Kind, Dimension: f.Dimension, Budget: f.Budget, RetryAfter: f.RetryAfterSec,
			ExceedsCapacity: f.ExceedsCapacity, Private: f.Private}
		if f.Private {
			lv := Level(f.Level)
			r.Refusal.Level = &lv
		}
	}
	if len(o.Levels) > 0 {
		r.Levels = make([]OpLevel, len(o.Levels))
		for i, l := range o.Levels {
			r.Levels[i] = OpLevel{Kind: l.Kind, Dimension: l.Dimension, Budget: l.Budget, Level: Level(l.Level)}
		}
	}
	return r
}

// Outcome converts a response to an admission outcome. The hold carries only
// the server's id; the caller adds the backend and the entries it reserved.
func (r AdmitResponse) Outcome() limit.Outcome {
	o := limit.Outcome{Skipped: r.Skipped, Hold: limit.Hold{ID: r.Hold}}
	if r.Admitted {
		o.Result = limit.ResultAdmitted
	}
	if r.Refusal != nil {
		f := r.Refusal
		if !r.Admitted {
			o.Result = limit.ResultRefused
		}
		o.Refusal = &limit.Refusal{Kind: f.Kind, Dimension: f.Dimension, Budget: f.Budget, RetryAfterSec: f.RetryAfter,
			ExceedsCapacity: f.ExceedsCapacity, Private: f.Private}
		if f.Private && f.Level != nil {
			o.Refusal.Level = limit.Level(*f.Level)
		}
	}
	if len(r.Levels) > 0 {
		o.Levels = make([]limit.OpLevel, len(r.Levels))
		for i, l := range r.Levels {
			o.Levels[i] = limit.OpLevel{Kind: l.Kind, Dimension: l.Dimension, Budget: l.Budget, Level: limit.Level(l.Level)}
		}
	}
	return o
}
