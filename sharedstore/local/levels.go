package local

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// TokenLevels reads the levels of plan's token buckets of the dimensions
// wanted reports true for, refilled to now, as shared data holds them: no
// write, no refund folded (with refund_batching a level is then at most one
// tick behind). It calls level once per limit of each such bucket that
// exists (period, level); a bucket no admission made yet is full and is
// reported so. It is the rate_limit_tokens_remaining gauge's read, made on
// the tick for the buckets no tenant owns, never per request.
func (s *Store) TokenLevels(plan limit.Plan, wanted func(limit.Dimension) bool, level func(op *limit.Op, l limit.Limit, v float64)) {
	now := s.now()
	for i := range plan.Tokens {
		op := &plan.Tokens[i]
		n := len(op.Limits)
		if !wanted(op.Dimension) || n == 0 || n > bucket.MaxLimits {
			continue
		}
		key, lay := op.Key, layout{}
		if op.Record != "" {
			// A record holds the dimension's request counts first.
			for j := range plan.Requests {
				if r := &plan.Requests[j]; partner(r, plan.Tokens) == i {
					key, lay = op.Record, layout{uint8(len(r.Limits)), uint8(len(r.Limits) + n)}
				}
			}
		}
		total, ok := lay.total(n)
		if !ok {
			continue
		}
		states := s.states[:total]
		value, _, err := s.sd.Get(key)
		switch {
		case errors.Is(err, ErrNotFound):
			for k := range states[lay.at:] {
				states[int(lay.at)+k] = bucket.Fresh(op.Limits[k], now)
			}
		case err != nil:
			continue
		default:
			if bucket.Decode(value, states) != nil {
				continue
			}
		}
		for k, l := range op.Limits {
			st := states[int(lay.at)+k]
			st.Refill(l, now)
			level(op, l, st.Level)
		}
	}
}
