//go:build !wasip1

package spendcache

import (
	"errors"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// NumKeys is how many KEYS the preflight appends to a script's keys: the
// policy, the balance, a usage key per slot, and the team's held, holds
// and expiry keys of its reservations.
const NumKeys = 5 + int(spend.NumSlots)

// NumArgs is how many ARGV the preflight uses after the admission's two.
const NumArgs = 27

// Keys appends the preflight's keys of a call (see preflight.lua) to dst.
func Keys(dst []string, sp *limit.Spend) []string {
	team := TeamOf(sp.Policy.Team)
	pol := PolicyKey(team)
	dst = append(dst, pol, BalanceKey(team))
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if id := slotID(sp, s); id != "" {
			dst = append(dst, slotKey(team, s, id, sp.Window(s)))
		} else {
			dst = append(dst, pol)
		}
	}
	return append(dst, HeldKey(team), HoldsKey(team), ExpiryKey(team))
}

// slotID is the id a call's slot is counted under ("" none): the team's
// own counter is the team's (NoTeam included).
func slotID(sp *limit.Spend, s spend.Slot) string {
	if s.Scope() == spend.Team {
		return TeamOf(sp.Policy.Team)
	}
	return sp.Policy.ID(s)
}

// Args appends the preflight's ARGV[3..] for a call whose keys start at
// KEYS[base] (1-based). snap, when not nil, is the ledger's view to use for
// keys that are absent. hold is the admission's hold id, under which the
// call's sp.Reserve is held ("" holds nothing).
func (c *Cache) Args(dst []any, sp *limit.Spend, base int, snap *Figures, hold string) []any {
	dst = argsOf(dst, sp, base, snap)
	return append(dst, strconv.FormatInt(int64(max(sp.Reserve, 0)), 10), hold, strconv.FormatInt(c.o.HoldTTL.Milliseconds(), 10))
}

func argsOf(dst []any, sp *limit.Spend, base int, snap *Figures) []any {
	dst = append(dst, strconv.Itoa(base))
	if snap != nil {
		dst = append(dst, "1")
	} else {
		dst = append(dst, "0")
	}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		dst = append(dst, amountArg(sp.Policy.Limits[s]))
	}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if id := slotID(sp, s); id != "" {
			dst = append(dst, policyField(s, id))
		} else {
			dst = append(dst, "")
		}
	}
	var f Figures
	if snap != nil {
		f = *snap
	}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		dst = append(dst, amountArg(f.Stored[s]))
	}
	dst = append(dst, boolArg(f.HasBalance))
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		dst = append(dst, strconv.FormatInt(int64(f.Used[s]), 10))
	}
	return append(dst, strconv.FormatInt(int64(f.Balance), 10))
}

func amountArg(l spend.Limit) string {
	if !l.Set {
		return ""
	}
	return strconv.FormatInt(int64(l.Amount), 10)
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Figures is the ledger's view of one call's counters: the stored limit
// and the usage of each slot, and the team's balance.
type Figures struct {
	Stored     [spend.NumSlots]spend.Limit
	Used       spend.Usage
	HasBalance bool
	Balance    money.Amount
}

// Verdict is the preflight's answer on one call.
type Verdict struct {
	// Limits are the limits that applied (the stricter of the filter's and
	// the team's stored one, per slot) and Used their usage before the call.
	Limits [spend.NumSlots]spend.Limit
	Used   spend.Usage
	// Refused is set when a limit refused the call (Balance false), or,
	// with Balance true, when the team's balance is exhausted.
	Refused *spend.Exceeded
	Balance bool
	// HasBalance and TeamBalance are the team's cached balance.
	HasBalance  bool
	TeamBalance money.Amount
}

// ErrMiss is the preflight's answer when a key it needs is absent: nothing
// was checked or written; load the team (Cache.Load) and run it again.
var ErrMiss = errors.New("spendcache: a spend key is not cached")

var errReply = errors.New("spendcache: malformed preflight reply")

// ParseOut reads the preflight's spendout table (the admission reply's
// seventh element, or the refusal reply's second).
func ParseOut(v any) (Verdict, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 3+2*int(spend.NumSlots) {
		return Verdict{}, errReply
	}
	ref, ok1 := a[0].(int64)
	hb, ok2 := a[1].(int64)
	if !ok1 || !ok2 || ref < 0 || ref > int64(spend.NumSlots)+1 {
		return Verdict{}, errReply
	}
	var vd Verdict
	var err error
	vd.HasBalance = hb == 1
	if vd.HasBalance {
		if vd.TeamBalance, err = amountOf(a[2]); err != nil {
			return Verdict{}, err
		}
	}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		lv, uv := a[3+int(s)], a[3+int(spend.NumSlots)+int(s)]
		if lv == nil {
			continue
		}
		l, err := amountOf(lv)
		if err != nil {
			return Verdict{}, err
		}
		u, err := amountOf(uv)
		if err != nil {
			return Verdict{}, err
		}
		vd.Limits[s], vd.Used[s] = spend.Limit{Amount: l, Set: true}, u
	}
	switch {
	case ref == int64(spend.NumSlots)+1:
		vd.Balance = true
		vd.Refused = &spend.Exceeded{Used: -vd.TeamBalance}
	case ref > 0:
		s := spend.Slot(ref - 1)
		if !vd.Limits[s].Set {
			return Verdict{}, errReply
		}
		vd.Refused = &spend.Exceeded{Slot: s, Limit: vd.Limits[s].Amount, Used: vd.Used[s]}
	}
	return vd, nil
}

func amountOf(v any) (money.Amount, error) {
	s, ok := v.(string)
	if !ok {
		return 0, errReply
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errReply
	}
	return money.Amount(n), nil
}

// Reply reads a preflight's early reply (its first element -2 or -3):
// handled false when the script went on to admit (the verdict is then in
// the admission reply's seventh element).
func Reply(a []any) (vd Verdict, handled bool, err error) {
	if len(a) == 0 {
		return Verdict{}, true, errReply
	}
	switch code, _ := a[0].(int64); code {
	case -2:
		return Verdict{}, true, ErrMiss
	case -3:
		if len(a) != 2 {
			return Verdict{}, true, errReply
		}
		vd, err := ParseOut(a[1])
		if err == nil && vd.Refused == nil {
			err = errReply
		}
		return vd, true, err
	}
	return Verdict{}, false, nil
}
