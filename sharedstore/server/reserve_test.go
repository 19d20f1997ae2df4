package server

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// held reads what the team's reservations hold on one usage key.
func (se *spendEnv) held(t *testing.T, team string, s spend.Slot, id string, sp limit.Spend) money.Amount {
	t.Helper()
	key := spendcache.UsageKey(spendcache.TeamOf(team), s.Scope(), id, s.Period(), sp.Window(s).Key)
	v, err := se.c.HGet(context.Background(), spendcache.HeldKey(spendcache.TeamOf(team)), key).Int64()
	if err != nil {
		return 0
	}
	return money.Amount(v)
}

func (se *spendEnv) release(t *testing.T, hold, team string) int {
	t.Helper()
	st, _, _ := se.post(t, wire.PathRelease, wire.AppendReleaseSpend(nil, hold, nil, team))
	return st
}

// The admission holds the call's maximum cost in the same script as its
// tokens: a second call sees it at once and is refused when its own cost
// does not fit what is left; the settlement moves the hold to the priced
// usage, a release gives it back.
func TestTheFleetHoldsACallsMaximumCostUntilItsSettlement(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-08T12:00:00Z")
			se := newSpendEnv(t, e, now)
			c := spender{team: uniq("team"), key: "k-1", user: "u-1", limits: map[spend.Slot]string{spend.KeyDay: "1.00"}}
			sp := c.spendAt(t, now)
			sp.Reserve = usdAmount(t, "0.60")

			first := se.admit(t, sp)
			require.NoError(t, first.err)
			require.True(t, first.out.Admitted())
			require.Equal(t, sp.Reserve, se.held(t, c.team, spend.KeyDay, "k-1", sp))

			second := se.admit(t, sp)
			require.NoError(t, second.err)
			require.False(t, second.out.Admitted(), "$0.60 held leaves $0.40: a second $0.60 does not fit")
			require.Equal(t, &spend.Exceeded{Slot: spend.KeyDay, Limit: usd(t, "1.00"), Used: usd(t, "0.60")}, second.out.SpendRefusal)

			st, _ := se.settle(t, first.hold, sp, "0.25", tokens.Kinds{Input: 10})
			require.Equal(t, http.StatusOK, st)
			require.Equal(t, money.Amount(0), se.held(t, c.team, spend.KeyDay, "k-1", sp), "settled: nothing held")
			got, _ := se.counter(t, c.team, spend.KeyDay, "k-1", sp.Day)
			require.Equal(t, usd(t, "0.25"), got)

			third := se.admit(t, sp)
			require.True(t, third.out.Admitted(), "$0.25 spent leaves room for $0.60")
			require.Equal(t, http.StatusOK, se.release(t, third.hold, c.team))
			require.Equal(t, money.Amount(0), se.held(t, c.team, spend.KeyDay, "k-1", sp), "released: nothing held")
			got, _ = se.counter(t, c.team, spend.KeyDay, "k-1", sp.Day)
			require.Equal(t, usd(t, "0.25"), got, "a release costs nothing")

			// check-only: no reservation, so calls pass while anything is left
			sp.Reserve = 0
			for range 3 {
				a := se.admit(t, sp)
				require.True(t, a.out.Admitted())
			}
		})
	}
}

// Parallel admissions on one key never hold more than its limit.
func TestParallelFleetAdmissionsNeverHoldMoreThanTheLimit(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-08T12:00:00Z")
			se := newSpendEnv(t, e, now)
			c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyDay: "1.00"}}
			sp := c.spendAt(t, now)
			sp.Reserve = usdAmount(t, "0.30")
			var wg sync.WaitGroup
			var mu sync.Mutex
			n := 0
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if a := se.admit(t, sp); a.out.Admitted() {
						mu.Lock()
						n++
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			require.Equal(t, 3, n, "three $0.30 holds fit in $1.00")
		})
	}
}

// A reservation whose settlement never comes lapses after the cache's
// HoldTTL, and its cost comes back at the next admission.
func TestALostReservationLapses(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-08T12:00:00Z")
	se := newSpendEnv(t, e, now)
	cache := spendcache.New(e.c, se.led, spendcache.Options{Now: se.clock.Now, HoldTTL: 1})
	se.store.spend = cache
	c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyDay: "1.00"}}
	sp := c.spendAt(t, now)
	sp.Reserve = usdAmount(t, "0.60")
	require.True(t, se.admit(t, sp).out.Admitted())
	require.Eventually(t, func() bool { return se.admit(t, sp).out.Admitted() }, 5e9, 5e6,
		"the earlier reservation lapsed, so $0.60 fits again")
}

func usd(t *testing.T, s string) money.Amount { return usdAmount(t, s) }
