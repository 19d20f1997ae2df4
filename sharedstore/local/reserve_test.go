package local_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

// reserving is a spend plan that holds cost at admission.
func reserving(t testing.TB, limits map[spend.Slot]money.Amount, cost money.Amount) limit.Spend {
	sp := spendAt(t, sep30Last, limits)
	sp.Reserve = cost
	return sp
}

// A request reserves its maximum cost on every limited counter at
// admission: a second request that does not fit what is left is refused
// while the first is in flight, and the settlement replaces the
// reservation with the priced usage.
func TestSpendIsReservedAtAdmissionAndSettledToTheCost(t *testing.T) {
	limits := map[spend.Slot]money.Amount{spend.KeyDay: usd, spend.TeamMonth: 10 * usd}
	cases := []struct {
		name     string
		reserve  money.Amount
		end      func(s *local.Store, h limit.Hold)
		spentDay money.Amount // the key's day counter after the end
	}{
		{"a settlement charges the priced usage", 600 * money.OneUSD / 1000,
			func(s *local.Store, h limit.Hold) { h.SpendCost = usd / 10; s.Settle(h, 0) }, usd / 10},
		{"a settlement above the reservation charges it whole", usd / 2,
			func(s *local.Store, h limit.Hold) { h.SpendCost = 7 * usd / 10; s.Settle(h, 0) }, 7 * usd / 10},
		{"a release gives the reservation back", 600 * money.OneUSD / 1000,
			func(s *local.Store, h limit.Hold) { s.Release(h) }, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(0)
			f.clock.t = sep30Last * sec
			sp := reserving(t, limits, c.reserve)
			first := admit(t, f.store, limit.Plan{Spend: sp})
			require.True(t, first.Admitted())
			require.Equal(t, c.reserve, spent(t, f, spend.KeyDay), "held at admission")
			require.Equal(t, c.reserve, spent(t, f, spend.TeamMonth), "held on every limited counter")

			second := admit(t, f.store, limit.Plan{Spend: sp})
			if c.reserve > usd/2 {
				require.False(t, second.Admitted(), "what is left does not fit a second maximum cost")
				require.Equal(t, spend.KeyDay, second.SpendRefusal.Slot)
				require.Equal(t, c.reserve, spent(t, f, spend.TeamMonth), "a refusal holds nothing")
			} else {
				require.True(t, second.Admitted())
				f.store.Release(second.Hold)
			}
			c.end(f.store, first.Hold)
			require.Equal(t, c.spentDay, spent(t, f, spend.KeyDay))
			require.Equal(t, c.spentDay, spent(t, f, spend.TeamMonth))
		})
	}
}

// A token refusal after the spend preflight gives the reservation back:
// the request was never made.
func TestATokenRefusalGivesTheSpendReservationBack(t *testing.T) {
	f := newFixture(0)
	f.clock.t = sep30Last * sec
	sp := reserving(t, map[spend.Slot]money.Amount{spend.KeyDay: usd}, usd/2)
	op := tokens("api_key", "h1", 500, minute(100))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{op}, Spend: sp})
	require.Equal(t, limit.ResultRefused, out.Result)
	require.Equal(t, money.Amount(0), spent(t, f, spend.KeyDay))
}

// The check-only rule (no reservation) admits while something is left,
// whatever the request may cost; a limit of 0 still blocks with a
// reservation of 0.
func TestWithoutAReservationOnlyTheSpendSoFarIsChecked(t *testing.T) {
	f := newFixture(0)
	f.clock.t = sep30Last * sec
	sp := reserving(t, map[spend.Slot]money.Amount{spend.KeyDay: usd}, 0)
	for range 5 {
		require.True(t, admit(t, f.store, limit.Plan{Spend: sp}).Admitted())
	}
	zero := reserving(t, map[spend.Slot]money.Amount{spend.KeyDay: 0}, 0)
	require.False(t, admit(t, f.store, limit.Plan{Spend: zero}).Admitted())
}

// Workers reserving at once on one counter never hold more than the
// limit: each reservation is a compare-and-swap that checks again.
func TestConcurrentWorkersNeverReserveMoreSpendThanTheLimit(t *testing.T) {
	const workers, each = 8, 40
	sd := localtest.New()
	c := &clock{t: sep30Last * sec}
	sp := reserving(t, map[spend.Slot]money.Amount{spend.KeyDay: usd}, usd/10)
	var mu sync.Mutex
	var held []limit.Hold
	var wg sync.WaitGroup
	for range workers {
		s := local.New(sd, c.now, 0)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				var out limit.Outcome
				s.Admit(limit.Plan{Spend: sp}, func(o limit.Outcome) { out = o })
				if out.Admitted() {
					mu.Lock()
					held = append(held, out.Hold)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, held, 10, "exactly what the limit holds: ten reservations of $0.10")
}

// spent is what the slot's counter holds for the call's period.
func spent(t testing.TB, f *fixture, slot spend.Slot) money.Amount {
	t.Helper()
	sp := spendAt(t, sep30Last, nil)
	v, _, err := f.sd.Get("tb|s|" + slot.String() + "|" + sp.Policy.ID(slot))
	if err != nil {
		return 0
	}
	require.Len(t, v, 12)
	return money.Amount(uint64(v[4])<<56 | uint64(v[5])<<48 | uint64(v[6])<<40 | uint64(v[7])<<32 |
		uint64(v[8])<<24 | uint64(v[9])<<16 | uint64(v[10])<<8 | uint64(v[11]))
}
