//go:build !wasip1

package spendcache

import (
	"context"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// Call is a recorded call as the postflight sees it: whose it is, the
// periods of its start and its estimated cost.
type Call struct {
	Team, APIKey, User string
	Day, Month         calendar.Window
	Estimate           money.Amount
}

// maxEstimate bounds one call's estimate, so a counter can never overflow
// (postflight.lua refuses counters past 18 digits).
const maxEstimate = money.Amount(1e17)

// Postflight adds a newly recorded call's estimate to the cached counters
// of its periods and deducts it from the cached balance, in one script. It
// touches only keys that are present: a counter is cached only when a
// limit bears on it, and an absent one is loaded later from the ledger,
// which already holds this call's record. A closed period's counters are
// left alone (only the ledger counts them), so an expired key is never
// recreated. Call it once per record: only for a record the ledger newly
// inserted.
func (c *Cache) Postflight(ctx context.Context, call Call) (changed int, err error) {
	return c.PostflightHold(ctx, call, "")
}

// PostflightHold is Postflight that also ends the spend reservation of
// hold (when not "") in the same script, so the call moves from held to
// counted at once: never counted twice (which could refuse a call that
// fits) nor by neither. A call without an estimate only ends the hold.
func (c *Cache) PostflightHold(ctx context.Context, call Call, hold string) (changed int, err error) {
	if call.Estimate <= 0 {
		if hold != "" {
			_, err = c.Unhold(ctx, call.Team, hold)
		}
		return 0, err
	}
	if call.Estimate > maxEstimate {
		return 0, errs.New("spendcache: estimate out of range")
	}
	team := TeamOf(call.Team)
	keys := make([]string, 0, spend.NumSlots+1)
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		w := call.Month
		if s.Period() == calendar.Day {
			w = call.Day
		}
		id := team
		switch s.Scope() {
		case spend.APIKey:
			id = call.APIKey
		case spend.User:
			id = call.User
		}
		if id != "" && c.open(w) {
			keys = append(keys, slotKey(team, s, id, w))
		}
	}
	keys = append(keys, BalanceKey(team))
	args := []any{strconv.FormatInt(int64(call.Estimate), 10)}
	if hold != "" {
		keys = append(keys, HeldKey(team), HoldsKey(team), ExpiryKey(team))
		args = append(args, hold)
	}
	n, err := c.post.Run(ctx, c.c, keys, args...).Int()
	if err != nil {
		return 0, errs.Wrap("spend postflight of team "+strconv.Quote(team), err)
	}
	return n, nil
}

// Unhold ends the spend reservation of hold in team (see unhold.lua): at
// its settlement, once the record is stored (its estimate then counts in
// the usage keys), or at its release. ended false: there was none (ended
// before, lapsed, or never held).
func (c *Cache) Unhold(ctx context.Context, team, hold string) (ended bool, err error) {
	team = TeamOf(team)
	n, err := c.unhold.Run(ctx, c.c, []string{HeldKey(team), HoldsKey(team), ExpiryKey(team)}, hold).Int()
	if err != nil {
		return false, errs.Wrap("spend unhold of team "+strconv.Quote(team), err)
	}
	return n == 1, nil
}
