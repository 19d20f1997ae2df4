//go:build !wasip1

package spendcache

import (
	"context"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// refreshChunk bounds the keys of one refresh script, so a team with many
// keys and users never blocks Redis for long.
const refreshChunk = 256

// Refresh rewrites the team's cached counters of the current day and month
// (by the cache's clock) and its balance to the ledger's figures: confirmed
// aggregate plus the estimates not yet charged (the outbox's included),
// never a charge on top of an
// estimate. Only present keys are set; closed periods are left to the
// ledger. The worker calls it after each commit and on every run, so a
// refresh that failed (or a worker stopped before it) is repaired by the
// next one.
func (c *Cache) Refresh(ctx context.Context, team string) (set int, err error) {
	now := c.o.Now().UnixNano()
	day, month, ok := calendar.Both(now)
	if !ok {
		return 0, errs.New("spendcache: clock before 1970")
	}
	snap, err := c.snapshot(ctx, team, []calendar.Window{day, month})
	if err != nil {
		return 0, errs.Wrap("spend refresh of team "+strconv.Quote(team), err)
	}
	var keys []string
	var args []any
	for k, amount := range snap.Figures {
		if k.Scope == spend.Team && k.ID != team {
			continue
		}
		keys = append(keys, UsageKey(team, k.Scope, k.ID, k.Period, k.Key))
		args = append(args, strconv.FormatInt(int64(amount), 10))
	}
	if snap.HasBalance {
		keys = append(keys, BalanceKey(team))
		args = append(args, strconv.FormatInt(int64(snap.Balance), 10))
	}
	for len(keys) > 0 {
		n := min(len(keys), refreshChunk)
		got, err := c.fresh.Run(ctx, c.c, keys[:n], args[:n]...).Int()
		if err != nil {
			return set, errs.Wrap("spend refresh of team "+strconv.Quote(team), err)
		}
		set += got
		keys, args = keys[n:], args[n:]
	}
	return set, nil
}
