package local

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// changeKind is a give-back applied to a bucket after admission.
type changeKind uint8

const (
	changeGive   changeKind = iota + 1 // return amount (undo, release, concurrency end)
	changeSettle                       // replace reservation amount with actual usage
	changeReturn                       // changeGive of units that were no hold (a refused request's counts)
)

// change applies a give-back to key in a CAS loop on the recorded limits and
// returns the bucket's states afterwards (s.states). It reports false when
// nothing was changed: a missing key has nothing to give back, a value that
// is not ours is left alone, and contention past endAttempts drops the
// change (the bucket then recovers by refill, as a lost settle would).
//
// pending (nil: none) is key's pending refund: it is folded in before the
// change and spent when the write succeeds, so an overage charged at once
// sees the level an immediate refund would have left (the skip rule reads
// it) and the refund costs no call of its own.
//
// lay places limits' states in the value at key (a record holds another
// op's too); the other states are written back as they were read.
func (s *Store) change(key string, limits []limit.Limit, lay layout, kind changeKind, amount, actual int64, overage limit.Overage, now int64, pending *refund) ([]bucket.State, bool) {
	n := len(limits)
	total, ok := lay.total(n)
	if !ok {
		return nil, false
	}
	all := s.states[:total]
	states := all[lay.at : int(lay.at)+n]
	for attempt := 0; attempt < endAttempts; attempt++ {
		value, cas, err := s.sd.Get(key)
		if err != nil {
			return nil, false
		}
		// A reusable slot's bucket (spill.go) is followed by its open
		// holds and owner: this change ends one of the holds.
		var slot slotValue
		spilled := isSpillKey(key)
		if spilled {
			if slot, ok = splitSlot(value, total); !ok {
				return nil, false
			}
			value = slot.states
		}
		if bucket.Decode(value, all) != nil {
			return nil, false
		}
		fold(pending, states, now)
		switch kind {
		case changeGive, changeReturn:
			bucket.Give(states, limits, amount, now)
		case changeSettle:
			bucket.Settle(states, limits, amount, actual, now, overage)
		}
		s.buf = bucket.AppendEncoded(s.buf[:0], all)
		if spilled {
			if kind != changeReturn && slot.opens > 0 {
				slot.opens--
			}
			s.buf = appendTrailer(s.buf, slot.opens, slot.owner)
		}
		err = s.sd.Set(key, s.buf, cas)
		if err == nil {
			if pending != nil {
				pending.amount = 0
			}
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
//
// A refund (usage at or under the reservation) is pending in the VM until
// the bucket's next admission here or the next Flush (refund.go); an
// overage, the concurrency units and the spend cost are written at once.
func (s *Store) Settle(h limit.Hold, actual int64) {
	if h.Backend != limit.BackendLocal {
		return
	}
	s.endSpend(&h.Spend, h.SpendCost)
	var now int64 // read once, when a write needs it: a refund that waits does not
	for i := range h.Entries {
		e := &h.Entries[i]
		switch {
		case e.Kind == limit.KindTokens && max(actual, 0) <= max(e.Amount, 0):
			// Settle with usage at or under the reservation is exactly a
			// give-back of the difference (bucket.Settle): it waits.
			s.refund(e.Key, e.Limits, entryLayout(e), max(e.Amount, 0)-max(actual, 0), &now)
		case e.Kind == limit.KindTokens:
			// An overage is charged at once: a charge left pending could be
			// lost, and the tokens would be free.
			s.change(e.Key, e.Limits, entryLayout(e), changeSettle, e.Amount, actual, h.Overage, s.clock(&now), s.pendingRefund(e.Key))
		case e.Kind == limit.KindConcurrency:
			// Concurrency units come back at once: another worker's request
			// may be waiting for this very unit.
			s.change(e.Key, e.Limits, entryLayout(e), changeGive, 1, 0, 0, s.clock(&now), nil)
		}
	}
}

// Release ends a hold that will never report usage (failure, cut stream,
// cache hit): every token and concurrency unit comes back, the tokens as a
// pending refund (refund.go), the concurrency units at once.
func (s *Store) Release(h limit.Hold) {
	if h.Backend != limit.BackendLocal {
		return
	}
	s.endSpend(&h.Spend, 0)
	var now int64 // read once, when a write needs it
	for i := range h.Entries {
		e := &h.Entries[i]
		switch e.Kind {
		case limit.KindTokens:
			s.refund(e.Key, e.Limits, entryLayout(e), e.Amount, &now)
		case limit.KindConcurrency:
			s.change(e.Key, e.Limits, entryLayout(e), changeGive, 1, 0, 0, s.clock(&now), nil)
		}
	}
}

// clock is the time *now holds, read from the store's clock the first
// time it is needed (0: not read yet). Each read is a host call in the VM,
// and an end of a hold whose refunds all wait writes nothing that needs it.
func (s *Store) clock(now *int64) int64 {
	if *now == 0 {
		*now = s.now()
	}
	return *now
}
