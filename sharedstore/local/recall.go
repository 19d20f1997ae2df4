package local

import (
	"encoding/binary"
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// The fleet store's last spend verdicts, kept for its outages. Each
// admission the fleet store answers writes, per limited slot and identity
// ("tb|v|<slot>|<id>") and for the team's balance ("tb|v|balance|<team>"),
// what the verdict left after that request's reservation:
//
//	period key (uint32; 0 for the balance) | left (int64) | held since (int64), big-endian
//
// "Held since" is what requests admitted here during an outage reserved
// or spent against it (fallback admissions, Spend.Recall), so every worker
// and every outage of this Envoy shares one figure per identity until the
// fleet answers again and the next verdict replaces it (its records then
// reach the ledger, which counts them). An exhausted slot or balance
// (left 0) refuses; any other admits only what fits what was left.
const (
	verdictKeyPrefix = "tb|v|"
	verdictValueLen  = 20
	balanceSlot      = spend.NumSlots // bit and index of the balance
)

func verdictKey(slot spend.Slot, id string) string {
	if slot == balanceSlot {
		return verdictKeyPrefix + "balance|" + id
	}
	return verdictKeyPrefix + slot.String() + "|" + id
}

// verdictID is the identity slot's verdict is kept under: the balance and
// the team month are the team's.
func verdictID(sp *limit.Spend, slot spend.Slot) string {
	if slot == balanceSlot {
		return sp.Policy.Team
	}
	return sp.Policy.ID(slot)
}

func verdictPeriod(sp *limit.Spend, slot spend.Slot) uint32 {
	if slot == balanceSlot {
		return 0
	}
	return sp.Window(slot).Key
}

func (s *Store) putVerdict(key string, period uint32, left, held money.Amount, cas uint32) error {
	s.buf = binary.BigEndian.AppendUint32(s.buf[:0], period)
	s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(left))
	s.buf = binary.BigEndian.AppendUint64(s.buf, uint64(held))
	return s.sd.Set(key, s.buf, cas)
}

func decodeVerdict(v []byte) (period uint32, left, held money.Amount, ok bool) {
	if len(v) != verdictValueLen {
		return 0, 0, 0, false
	}
	return binary.BigEndian.Uint32(v), money.Amount(binary.BigEndian.Uint64(v[4:])),
		money.Amount(binary.BigEndian.Uint64(v[12:])), true
}

// RememberSpend keeps what the fleet store's answer o to a request with
// spend part sp left of each limit and of the balance (see the top of this
// file). An admitted request's own reservation is taken off what is left.
// A write that fails is skipped: the memory is a best effort for outages.
func (s *Store) RememberSpend(sp *limit.Spend, o *limit.Outcome) {
	left := &o.SpendLeft
	for slot := spend.Slot(0); slot <= balanceSlot; slot++ {
		l := left.Balance
		if slot < balanceSlot {
			l = left.Left[slot]
		}
		id := verdictID(sp, slot)
		if !l.Set || id == "" {
			continue
		}
		amount := l.Amount
		if o.Admitted() {
			amount -= min(amount, max(sp.Reserve, 0))
		}
		_ = s.putVerdict(verdictKey(slot, id), verdictPeriod(sp, slot), amount, 0, 0)
	}
}

// recall is the fallback's preflight on the remembered verdicts: a slot
// (or the balance) with a verdict for the call's period refuses the
// request when its reservation does not fit what was left less what was
// held since, and otherwise holds it there. It sets sp.Recalled to the
// slots it decided, which the counters then leave alone and the end of the
// hold settles.
func (s *Store) recall(sp *limit.Spend, out *limit.Outcome) (refused bool) {
	cost := max(sp.Reserve, 0)
	var decided uint8
	for slot := spend.Slot(0); slot <= balanceSlot; slot++ {
		id := verdictID(sp, slot)
		if id == "" {
			continue
		}
		key := verdictKey(slot, id)
		period := verdictPeriod(sp, slot)
		for attempt := 0; attempt < endAttempts; attempt++ {
			v, cas, err := s.sd.Get(key)
			if err != nil {
				break // none remembered (or unreadable): the counters decide
			}
			p, left, held, ok := decodeVerdict(v)
			if !ok || p != period {
				break
			}
			if !spend.Fits(held, cost, left) {
				s.endRecalled(sp, 0) // what was held on the slots before
				ex := spend.Exceeded{Slot: slot, Balance: slot == balanceSlot}
				if slot < balanceSlot {
					ex.Limit = left
					if l := sp.Policy.Limits[slot]; l.Set {
						ex.Limit = l.Amount
					}
					ex.Used = ex.Limit - left + held
				}
				out.Result, out.SpendRefusal = limit.ResultSpendRefused, &ex
				return true
			}
			if cost == 0 {
				decided |= 1 << slot
				break
			}
			err = s.putVerdict(key, p, left, held+cost, cas)
			if err == nil {
				decided |= 1 << slot
				sp.Recalled = decided
				break
			}
			if !errors.Is(err, ErrCasMismatch) {
				break
			}
		}
	}
	sp.Recalled = decided
	return false
}

// endRecalled replaces the reservation recall held on each of sp.Recalled
// with cost (0: gives it back), while the value still counts the call's
// period. A verdict of the fleet store that replaced the value meanwhile
// starts from 0 held; it counts the call itself once its record arrives.
func (s *Store) endRecalled(sp *limit.Spend, cost money.Amount) {
	delta := max(cost, 0) - max(sp.Reserve, 0)
	for slot := spend.Slot(0); slot <= balanceSlot && sp.Recalled != 0; slot++ {
		if sp.Recalled&(1<<slot) == 0 {
			continue
		}
		key := verdictKey(slot, verdictID(sp, slot))
		for attempt := 0; attempt < endAttempts; attempt++ {
			v, cas, err := s.sd.Get(key)
			if err != nil {
				break
			}
			p, left, held, ok := decodeVerdict(v)
			if !ok || p != verdictPeriod(sp, slot) {
				break
			}
			next := max(held+delta, 0)
			if delta > 0 {
				next = held + min(delta, money.Max-held)
			}
			if err = s.putVerdict(key, p, left, next, cas); !errors.Is(err, ErrCasMismatch) {
				break
			}
		}
	}
	sp.Recalled = 0
}
