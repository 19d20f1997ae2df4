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

// Plan converts the wire form back to a plan. Every op's limits share one
// array (each op's slice capped at its own): the service converts a plan on
// every admission, and an array per op was a third of the conversion's
// allocations.
func (r AdmitRequest) Plan() limit.Plan {
	sp, _ := r.Spend.Spend() // Validate refuses a spend part that does not convert
	n := 0
	for _, o := range r.Requests {
		n += len(o.Limits)
	}
	for _, o := range r.Tokens {
		n += len(o.Limits)
	}
	ls := make([]limit.Limit, 0, n)
	return limit.Plan{Requests: toOps(r.Requests, &ls), Tokens: toOps(r.Tokens, &ls), Overage: OverageRule(r.Overage), Spend: sp}
}

// toOps converts ops, appending their limits to *ls.
func toOps(ops []Op, ls *[]limit.Limit) []limit.Op {
	if len(ops) == 0 {
		return nil
	}
	out := make([]limit.Op, len(ops))
	for i, o := range ops {
		start := len(*ls)
		for _, l := range o.Limits {
			*ls = append(*ls, limit.Limit(l))
		}
		out[i] = limit.Op{Key: o.Key, Kind: o.Kind, Dimension: o.Dimension, Limits: (*ls)[start:len(*ls):len(*ls)], Amount: o.Amount, Private: o.Private}
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
