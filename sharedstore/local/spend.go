package local

import (
	"encoding/binary"
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// Spend counters live in shared data beside the buckets, one key per slot
// and identity ("tb|s|<slot>|<id>", e.g. tb|s|api_key_day|k-alice), whose
// value is the period it counts and the nano-USD spent in it:
//
//	period key (uint32, YYYYMMDD or YYYYMM) | amount (int64), big-endian
//
// Shared data cannot delete keys, so a counter is not kept per period: the
// first charge of a new period overwrites the closed one. A closed period's
// counter is therefore gone, as the rules allow (only the call's own
// periods are ever checked), and the number of keys is bounded by the
// configured limits, whatever the calendar does. Counters are not
// versioned by config: a reload that changes a limit keeps what was spent.
const (
	spendKeyPrefix = "tb|s|"
	spendValueLen  = 12
)

func spendKey(slot spend.Slot, id string) string {
	return spendKeyPrefix + slot.String() + "|" + id
}

// spendKeyRef is a counter's slot and identity, the key of the cache of
// built counter keys.
type spendKeyRef struct {
	slot spend.Slot
	id   string
}

// maxSpendKeys bounds the cache; the limited identities are the configured
// ones, so a full cache is rare and is simply started again.
const maxSpendKeys = 4096

// counterKey is spendKey, built once per identity: every request under a
// limit reads and writes its counters, and the key is the same each time.
func (s *Store) counterKey(slot spend.Slot, id string) string {
	ref := spendKeyRef{slot, id}
	if k, ok := s.spendKeys[ref]; ok {
		return k
	}
	if s.spendKeys == nil || len(s.spendKeys) >= maxSpendKeys {
		s.spendKeys = make(map[spendKeyRef]string, 16)
	}
	k := spendKey(slot, id)
	s.spendKeys[ref] = k
	return k
}

func decodeSpend(v []byte) (period uint32, amount money.Amount, ok bool) {
	if len(v) != spendValueLen {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(v), money.Amount(binary.BigEndian.Uint64(v[4:])), true
}

// spendUsage is what the counter of slot holds for the call's period: 0
// when it has never been charged or counts another period.
func (s *Store) spendUsage(sp *limit.Spend, slot spend.Slot) (money.Amount, error) {
	v, _, err := s.sd.Get(s.counterKey(slot, sp.Policy.ID(slot)))
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, errs.Wrap("read "+slot.String()+" spend", err)
	}
	period, amount, ok := decodeSpend(v)
	if !ok {
		return 0, errs.New("read " + slot.String() + " spend: malformed counter")
	}
	if period != sp.Window(slot).Key {
		return 0, nil
	}
	return amount, nil
}

// preflight reads the usage of every limited slot in the call's periods
// and applies spend.CheckReserve with the plan's reservation. A plan that
// reserves then adds it to every limited counter, each by its own
// compare-and-swap that checks again that it fits (another worker may have
// reserved in between); one that no longer fits gives back what was taken
// and refuses. Without a reservation it only reads: the cost is added at
// settlement.
//
// A fallback plan (sp.Recall) is first checked against the fleet store's
// remembered verdicts (recall.go); the counters then decide only the
// slots no verdict decided.
func (s *Store) preflight(sp *limit.Spend, out *limit.Outcome) (refused bool, err error) {
	if sp.Recall && s.recall(sp, out) {
		return true, nil
	}
	p := &sp.Policy
	if sp.Recalled != 0 {
		p = s.unrecalledPolicy(sp)
	}
	for slot := spend.Slot(0); slot < spend.NumSlots; slot++ {
		if !p.Limits[slot].Set {
			continue
		}
		if out.Spend[slot], err = s.spendUsage(sp, slot); err != nil {
			s.endRecalled(sp, 0)
			return false, err
		}
	}
	if ex, ok := spend.CheckReserve(p, &out.Spend, sp.Reserve); !ok {
		s.endRecalled(sp, 0)
		refused := ex // allocated only on a refusal
		out.Result, out.SpendRefusal = limit.ResultSpendRefused, &refused
		return true, nil
	}
	if sp.Reserve <= 0 {
		return false, nil
	}
	for slot := spend.Slot(0); slot < spend.NumSlots; slot++ {
		l := p.Limits[slot]
		if !l.Set {
			continue
		}
		used, fits := s.reserveSpend(s.counterKey(slot, sp.Policy.ID(slot)), sp.Window(slot).Key, sp.Reserve, l.Amount)
		if fits {
			continue
		}
		for back := spend.Slot(0); back < slot; back++ {
			if p.Limits[back].Set {
				s.addSpend(s.counterKey(back, sp.Policy.ID(back)), sp.Window(back).Key, -sp.Reserve)
			}
		}
		s.endRecalled(sp, 0)
		out.Spend[slot] = used
		refused := spend.Exceeded{Slot: slot, Limit: l.Amount, Used: used}
		out.Result, out.SpendRefusal = limit.ResultSpendRefused, &refused
		return true, nil
	}
	return false, nil
}

// reserveSpend adds cost to the counter at key for period when it fits
// under limit, in one compare-and-swap loop; fits false (with the usage it
// found) refuses. A counter that already counts a later period (the call
// started before a boundary another request crossed first) is left alone
// and fits: the call's own period is closed, its counter gone. A write the
// store cannot make (contention past endAttempts, an unreadable value)
// admits without the hold, as a lost settlement would.
func (s *Store) reserveSpend(key string, period uint32, cost, limit money.Amount) (used money.Amount, fits bool) {
	for attempt := 0; attempt < endAttempts; attempt++ {
		v, cas, err := s.sd.Get(key)
		used = 0
		switch {
		case errors.Is(err, ErrNotFound):
			if cas, err = s.foreignCas(); err != nil {
				return 0, true
			}
		case err != nil:
			return 0, true
		default:
			p, amount, ok := decodeSpend(v)
			switch {
			case !ok || p > period:
				return 0, true
			case p == period:
				used = amount
			}
		}
		if !spend.Fits(used, cost, limit) {
			return used, false
		}
		s.buf = binary.BigEndian.AppendUint32(s.buf[:0], period)
		s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(used+cost))
		err = s.sd.Set(key, s.buf, cas)
		if err == nil || !errors.Is(err, ErrCasMismatch) {
			return used, true
		}
	}
	return used, true
}

// endSpend ends a hold's spend part: cost replaces the reservation on
// every policy-bearing counter of the hold's periods at once (cost 0 for
// a release gives the reservation back). A counter that already counts a
// later period (the call started before a boundary another request
// crossed first) keeps it: the call's own period is closed and its
// counter gone.
func (s *Store) endSpend(sp *limit.Spend, cost money.Amount) {
	delta := max(cost, 0) - max(sp.Reserve, 0)
	if delta == 0 || !sp.Any() {
		return
	}
	recalled := sp.Recalled
	if recalled != 0 {
		s.endRecalled(sp, cost)
	}
	for slot := spend.Slot(0); slot < spend.NumSlots; slot++ {
		if sp.Policy.Limits[slot].Set && recalled&(1<<slot) == 0 {
			s.addSpend(s.counterKey(slot, sp.Policy.ID(slot)), sp.Window(slot).Key, delta)
		}
	}
}

// unrecalledPolicy is sp's policy without the slots recall decided.
func (s *Store) unrecalledPolicy(sp *limit.Spend) *spend.Policy {
	p := sp.Policy
	for slot := spend.Slot(0); slot < spend.NumSlots; slot++ {
		if sp.Recalled&(1<<slot) != 0 {
			p.Limits[slot].Set = false
		}
	}
	return &p
}

// addSpend is one counter's CAS loop. cost may be negative (a reservation
// given back or settled lower), and never takes a counter below zero nor
// starts a new period. Contention past endAttempts drops the charge, like
// a lost settlement; a value that is not a counter is left alone.
func (s *Store) addSpend(key string, period uint32, cost money.Amount) {
	for attempt := 0; attempt < endAttempts; attempt++ {
		v, cas, err := s.sd.Get(key)
		var next money.Amount
		switch {
		case errors.Is(err, ErrNotFound):
			if cost <= 0 {
				return
			}
			if cas, err = s.foreignCas(); err != nil {
				return
			}
			next = cost
		case err != nil:
			return
		default:
			p, amount, ok := decodeSpend(v)
			switch {
			case !ok || p > period:
				return
			case p == period && cost < 0:
				next = max(amount+cost, 0)
			case p == period:
				next = amount + min(cost, money.Max-amount) // saturates
			case cost <= 0:
				return // nothing of this period to give back
			default:
				next = cost // the counter's period closed: this one starts
			}
		}
		s.buf = binary.BigEndian.AppendUint32(s.buf[:0], period)
		s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(next))
		err = s.sd.Set(key, s.buf, cas)
		if err == nil || !errors.Is(err, ErrCasMismatch) {
			return
		}
	}
}
