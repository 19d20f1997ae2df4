//go:build !wasip1

package spendcache

import (
	"context"
	"strconv"
	"time"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// Load answers a preflight miss: it reads the team's policies, balance and
// the figures of the call's periods from the ledger (the outbox's records
// counted as pending, see snapshot), fills the keys that
// are absent (never one that is present, and never a closed period's) and
// returns the ledger's view of the call, for the preflight to run again
// with. Concurrent misses of one team and periods share one ledger read,
// so a cold cache costs the database one query per team, however many
// requests arrive at once. A read that fails is an error (the caller
// answers unavailable); one that finds nothing starts every counter at 0.
func (c *Cache) Load(ctx context.Context, sp *limit.Spend) (*Figures, error) {
	team := TeamOf(sp.Policy.Team)
	key := team + "\x00" + strconv.FormatUint(uint64(sp.Day.Key), 10)
	v, err, _ := c.loads.Do(key, func() (any, error) {
		start := time.Now()
		// The load outlives a caller that gives up, so the others sharing
		// it still get an answer; it has its own bound.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		snap, err := c.snapshot(lctx, team, []calendar.Window{sp.Day, sp.Month})
		if c.OnLoad != nil {
			c.OnLoad(time.Since(start), err)
		}
		if err != nil {
			return nil, errs.Wrap("spend cache load of team "+strconv.Quote(team), err)
		}
		return &snap, nil
	})
	if err != nil {
		return nil, err
	}
	snap := v.(*ledger.Snapshot)
	f := figuresOf(snap, sp)
	if err := c.fillTeam(ctx, team, snap, sp, f); err != nil {
		return nil, err
	}
	return f, nil
}

// figuresOf is the snapshot's view of one call's slots.
func figuresOf(snap *ledger.Snapshot, sp *limit.Spend) *Figures {
	f := &Figures{HasBalance: snap.HasBalance, Balance: snap.Balance}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		id := slotID(sp, s)
		if id == "" {
			continue
		}
		for _, p := range snap.Policies {
			if ps, ok := p.Slot(); ok && ps == s && p.ID == id {
				f.Stored[s] = spend.Limit{Amount: p.Limit, Set: true}
			}
		}
		w := sp.Window(s)
		f.Used[s] = snap.Figures[ledger.FigureKey{Scope: s.Scope(), ID: id, Period: w.Period, Key: w.Key}]
	}
	return f
}

// fillTeam writes the policy hash, the balance and the counters of the
// open periods that carry a limit: every stored policy of the team, and
// the call's own limited slots.
func (c *Cache) fillTeam(ctx context.Context, team string, snap *ledger.Snapshot, sp *limit.Spend, f *Figures) error {
	keys := []string{PolicyKey(team), BalanceKey(team)}
	args := []any{strconv.FormatInt(c.o.PolicyTTL.Milliseconds(), 10), 0}
	fields := []any{policyLoaded, "1", policyBalance, boolArg(snap.HasBalance)}
	for _, p := range snap.Policies {
		if s, ok := p.Slot(); ok {
			fields = append(fields, policyField(s, p.ID), strconv.FormatInt(int64(p.Limit), 10))
		}
	}
	args[1] = strconv.Itoa(len(fields) / 2)
	args = append(args, fields...)
	if snap.HasBalance {
		args = append(args, strconv.FormatInt(int64(snap.Balance), 10))
	} else {
		args = append(args, "")
	}
	seen := map[string]bool{}
	add := func(s spend.Slot, id string, w calendar.Window) {
		if id == "" || !c.open(w) {
			return
		}
		k := slotKey(team, s, id, w)
		if seen[k] {
			return
		}
		seen[k] = true
		amount := snap.Figures[ledger.FigureKey{Scope: s.Scope(), ID: id, Period: w.Period, Key: w.Key}]
		keys = append(keys, k)
		args = append(args, strconv.FormatInt(int64(amount), 10), strconv.FormatInt(c.ttl(w), 10))
	}
	for _, p := range snap.Policies {
		if s, ok := p.Slot(); ok {
			add(s, p.ID, sp.Window(s))
		}
	}
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		if sp.Policy.Limits[s].Set || f.Stored[s].Set {
			add(s, slotID(sp, s), sp.Window(s))
		}
	}
	if err := c.fill.Run(ctx, c.c, keys, args...).Err(); err != nil {
		return errs.Wrap("spend cache fill of team "+strconv.Quote(team), err)
	}
	return nil
}
