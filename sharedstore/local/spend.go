package local

import (
	"encoding/binary"
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/sharedstore"
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

func decodeSpend(v []byte) (period uint32, amount money.Amount, ok bool) {
	if len(v) != spendValueLen {
		return 0, 0, false
	}
	return binary.BigEndian.Uint32(v), money.Amount(binary.BigEndian.Uint64(v[4:])), true
}

// spendUsage is what the counter of slot holds for the call's period: 0
// when it has never been charged or counts another period.
func (s *Store) spendUsage(sp *sharedstore.Spend, slot spend.Slot) (money.Amount, error) {
	v, _, err := s.sd.Get(spendKey(slot, sp.Policy.ID(slot)))
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
// and applies spend.Check. It reads only: nothing is reserved, the cost is
// added at settlement.
func (s *Store) preflight(sp *sharedstore.Spend, out *sharedstore.Outcome) (refused bool, err error) {
	for slot := spend.Slot(0); slot < spend.NumSlots; slot++ {
		if !sp.Policy.Limits[slot].Set {
			continue
		}
		if out.Spend[slot], err = s.spendUsage(sp, slot); err != nil {
			return false, err
		}
	}
	if ex, ok := spend.Check(&sp.Policy, &out.Spend); !ok {
		out.SpendRefusal = &ex
		return true, nil
	}
	return false, nil
}

// postflight adds cost to every policy-bearing counter of the hold's
// periods at once. A counter that already counts a later period (the call
// started before a boundary another request crossed first) keeps it: the
// call's own period is closed and its counter gone.
func (s *Store) postflight(sp *sharedstore.Spend, cost money.Amount) {
	if cost <= 0 || !sp.Any() {
		return
	}
	for slot := spend.Slot(0); slot < spend.NumSlots; slot++ {
		if sp.Policy.Limits[slot].Set {
			s.addSpend(spendKey(slot, sp.Policy.ID(slot)), sp.Window(slot).Key, cost)
		}
	}
}

// addSpend is one counter's CAS loop. Contention past endAttempts drops the
// charge, like a lost settlement; a value that is not a counter is left
// alone.
func (s *Store) addSpend(key string, period uint32, cost money.Amount) {
	var buf [spendValueLen]byte
	for attempt := 0; attempt < endAttempts; attempt++ {
		v, cas, err := s.sd.Get(key)
		var next money.Amount
		switch {
		case errors.Is(err, ErrNotFound):
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
			case p == period:
				next = amount + min(cost, money.Max-amount) // saturates
			default:
				next = cost // the counter's period closed: this one starts
			}
		}
		binary.BigEndian.PutUint32(buf[:4], period)
		binary.BigEndian.PutUint64(buf[4:], uint64(next))
		err = s.sd.Set(key, buf[:], cas)
		if err == nil || !errors.Is(err, ErrCasMismatch) {
			return
		}
	}
}
