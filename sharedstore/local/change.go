package local

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// changeKind is a give-back applied to a bucket after admission.
type changeKind uint8

const (
	changeGive   changeKind = iota + 1 // return amount (undo, release, concurrency end)
	changeSettle                       // replace reservation amount with actual usage
)

// change applies a give-back to key in a CAS loop on the recorded limits and
// returns the bucket's states afterwards (s.states). It reports false when
// nothing was changed: a missing key has nothing to give back, a value that
// is not ours is left alone, and contention past endAttempts drops the
// change (the bucket then recovers by refill, as a lost settle would).
func (s *Store) change(key string, limits []sharedstore.Limit, kind changeKind, amount, actual int64, overage sharedstore.Overage, now int64) ([]bucket.State, bool) {
	n := len(limits)
	if n == 0 || n > bucket.MaxLimits {
		return nil, false
	}
	states := s.states[:n]
	for attempt := 0; attempt < endAttempts; attempt++ {
		value, cas, err := s.sd.Get(key)
		if err != nil {
			return nil, false
		}
		if bucket.Decode(value, states) != nil {
			return nil, false
		}
		switch kind {
		case changeGive:
			bucket.Give(states, limits, amount, now)
		case changeSettle:
			bucket.Settle(states, limits, amount, actual, now, overage)
		}
		s.buf = bucket.AppendEncoded(s.buf[:0], states)
		err = s.sd.Set(key, s.buf, cas)
		if err == nil {
			return states, true
		}
		if !errors.Is(err, ErrCasMismatch) {
			return nil, false
		}
	}
	return nil, false
}

// Settle ends an admitted hold with the reported usage: each token entry
// trades its reservation for actual (a refund, or an overage charged by the
// hold's overage rule: whole, as a debt, or only where it fits) on the
// parameters and rule recorded in the hold, never the live config; each
// concurrency unit comes back; the hold's SpendCost is added to its spend
// counters of the call's start periods. A hold of another backend is
// not this store's to end.
func (s *Store) Settle(h sharedstore.Hold, actual int64) {
	if h.Backend != sharedstore.BackendLocal {
		return
	}
	s.postflight(&h.Spend, h.SpendCost)
	now := s.now()
	for i := range h.Entries {
		e := &h.Entries[i]
		switch e.Kind {
		case sharedstore.KindTokens:
			s.change(e.Key, e.Limits, changeSettle, e.Amount, actual, h.Overage, now)
		case sharedstore.KindConcurrency:
			s.change(e.Key, e.Limits, changeGive, 1, 0, 0, now)
		}
	}
}

// Release ends a hold that will never report usage (failure, cut stream,
// cache hit): every token and concurrency unit comes back.
func (s *Store) Release(h sharedstore.Hold) {
	if h.Backend != sharedstore.BackendLocal {
		return
	}
	now := s.now()
	for i := range h.Entries {
		e := &h.Entries[i]
		switch e.Kind {
		case sharedstore.KindTokens:
			s.change(e.Key, e.Limits, changeGive, e.Amount, 0, 0, now)
		case sharedstore.KindConcurrency:
			s.change(e.Key, e.Limits, changeGive, 1, 0, 0, now)
		}
	}
}
