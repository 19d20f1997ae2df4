package local_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

const usd = money.OneUSD

// spendAt is a spend plan of policy for a call starting at unixSec.
func spendAt(t testing.TB, unixSec int64, limits map[spend.Slot]money.Amount) limit.Spend {
	t.Helper()
	day, month, ok := calendar.Both(unixSec * sec)
	require.True(t, ok)
	p := spend.Policy{Team: "eng", APIKey: "k-alice", User: "alice"}
	for s, a := range limits {
		p.Limits[s] = spend.Limit{Amount: a, Set: true}
	}
	return limit.Spend{Policy: p, Day: day, Month: month}
}

// charge admits a spend-only plan and settles it at cost.
func charge(t testing.TB, f *fixture, sp limit.Spend, cost money.Amount) limit.Outcome {
	t.Helper()
	out := admit(t, f.store, limit.Plan{Spend: sp})
	require.NoError(t, out.Err)
	if out.Admitted() {
		h := out.Hold
		h.SpendCost = cost
		f.store.Settle(h, 0)
	}
	return out
}

// 2026-09-30 23:59:59 UTC and one second later.
const (
	sep30Last = int64(1790812799)
	oct1First = sep30Last + 1
)

func TestSpendPreflightRefusesWhenUsageReachesALimit(t *testing.T) {
	cases := []struct {
		name    string
		limits  map[spend.Slot]money.Amount
		spent   []money.Amount // settled before the checked request
		refused bool
		slot    spend.Slot
	}{
		{"under the key's day limit", map[spend.Slot]money.Amount{spend.KeyDay: 5 * usd}, []money.Amount{4 * usd}, false, 0},
		{"usage equal to the limit refuses", map[spend.Slot]money.Amount{spend.KeyDay: 5 * usd}, []money.Amount{2 * usd, 3 * usd}, true, spend.KeyDay},
		{"usage past the limit refuses", map[spend.Slot]money.Amount{spend.KeyDay: 5 * usd}, []money.Amount{4 * usd, 2 * usd}, true, spend.KeyDay},
		{"a limit of 0 blocks the first request", map[spend.Slot]money.Amount{spend.UserMonth: 0}, nil, true, spend.UserMonth},
		{"every limit must pass: the team month refuses a key under its day limit",
			map[spend.Slot]money.Amount{spend.KeyDay: 5 * usd, spend.TeamMonth: 3 * usd}, []money.Amount{3 * usd}, true, spend.TeamMonth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(0)
			f.clock.t = sep30Last * sec
			sp := spendAt(t, sep30Last, c.limits)
			for _, cost := range c.spent {
				require.True(t, charge(t, f, sp, cost).Admitted())
			}
			out := admit(t, f.store, limit.Plan{Spend: sp})
			require.NoError(t, out.Err)
			require.Equal(t, !c.refused, out.Admitted())
			if c.refused {
				require.NotNil(t, out.SpendRefusal)
				require.Equal(t, c.slot, out.SpendRefusal.Slot)
				require.Nil(t, out.Refusal)
			} else {
				require.Nil(t, out.SpendRefusal)
			}
		})
	}
}

func TestPostflightAddsTheCostToEveryPolicyBearingCounter(t *testing.T) {
	f := newFixture(0)
	sp := spendAt(t, sep30Last, map[spend.Slot]money.Amount{spend.KeyDay: 10 * usd, spend.KeyMonth: 100 * usd, spend.TeamMonth: 1000 * usd})
	charge(t, f, sp, 1_234_567)
	charge(t, f, sp, 1)
	out := admit(t, f.store, limit.Plan{Spend: sp})
	require.True(t, out.Admitted())
	require.Equal(t, spend.Usage{spend.TeamMonth: 1_234_568, spend.KeyDay: 1_234_568, spend.KeyMonth: 1_234_568}, out.Spend,
		"the user slots carry no limit: neither read nor counted")
	for _, k := range f.sd.Keys() {
		require.False(t, strings.HasPrefix(k, "tb|s|user"), "a slot without a limit has no counter: %s", k)
	}
}

func TestACallIsCountedInThePeriodsItStarted(t *testing.T) {
	f := newFixture(0)
	limits := map[spend.Slot]money.Amount{spend.KeyDay: 10 * usd, spend.KeyMonth: 100 * usd}
	// Started on September 30, settled on October 1.
	f.clock.t = sep30Last * sec
	out := admit(t, f.store, limit.Plan{Spend: spendAt(t, sep30Last, limits)})
	require.True(t, out.Admitted())
	f.clock.t = (oct1First + 5) * sec
	h := out.Hold
	h.SpendCost = 2 * usd
	f.store.Settle(h, 0)

	require.Equal(t, money.Amount(2*usd), admit(t, f.store, limit.Plan{Spend: spendAt(t, sep30Last, limits)}).Spend[spend.KeyDay],
		"September 30 got the cost")
	oct := admit(t, f.store, limit.Plan{Spend: spendAt(t, oct1First, limits)})
	require.Equal(t, spend.Usage{}, oct.Spend, "October starts from $0 for both day and month")

	// Once October is charged, a late September settlement cannot reach it.
	charge(t, f, spendAt(t, oct1First, limits), 1*usd)
	late := admit(t, f.store, limit.Plan{Spend: spendAt(t, sep30Last, limits)})
	h = late.Hold
	h.SpendCost = 7 * usd
	f.store.Settle(h, 0)
	require.Equal(t, spend.Usage{spend.KeyDay: 1 * usd, spend.KeyMonth: 1 * usd},
		admit(t, f.store, limit.Plan{Spend: spendAt(t, oct1First, limits)}).Spend)
}

func TestAReleasedHoldCostsNothing(t *testing.T) {
	f := newFixture(0)
	sp := spendAt(t, sep30Last, map[spend.Slot]money.Amount{spend.KeyDay: 1 * usd})
	out := admit(t, f.store, limit.Plan{Spend: sp})
	h := out.Hold
	h.SpendCost = 5 * usd // even with a cost recorded, a release adds none
	f.store.Release(h)
	require.Equal(t, spend.Usage{}, admit(t, f.store, limit.Plan{Spend: sp}).Spend)
}

func TestASpendRefusalTakesNoBucket(t *testing.T) {
	f := newFixture(0)
	sp := spendAt(t, sep30Last, map[spend.Slot]money.Amount{spend.KeyDay: 0})
	req := requests("api_key", "a", minute(10))
	tok := tokens("api_key", "a", 100, minute(1000))
	out := admit(t, f.store, limit.Plan{Requests: []limit.Op{req}, Tokens: []limit.Op{tok}, Spend: sp})
	require.NotNil(t, out.SpendRefusal)
	require.Nil(t, levels(t, f.sd, req), "no request-count unit taken")
	require.Nil(t, levels(t, f.sd, tok), "no tokens reserved")
}

func TestNoSpendPolicyReadsAndWritesNothing(t *testing.T) {
	f := newFixture(0)
	sp := spendAt(t, sep30Last, nil)
	tok := tokens("api_key", "a", 100, minute(1000))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{tok}, Spend: sp})
	require.True(t, out.Admitted())
	h := out.Hold
	h.SpendCost = 3 * usd
	f.store.Settle(h, 100)
	for _, k := range f.sd.Keys() {
		require.False(t, strings.HasPrefix(k, "tb|s|"), "no spend counter without a limit: %s", k)
	}
}

func TestAMalformedSpendCounterFailsTheAdmission(t *testing.T) {
	f := newFixture(0)
	require.NoError(t, f.sd.Set("tb|s|api_key_day|k-alice", []byte("junk"), 0))
	out := admit(t, f.store, limit.Plan{Spend: spendAt(t, sep30Last, map[spend.Slot]money.Amount{spend.KeyDay: usd})})
	require.ErrorIs(t, out.Err, limit.ErrSpendUnavailable, "a counter the store cannot read is an outage, not $0")
}

// FuzzGarbageInASpendCounterNeverPanics writes arbitrary bytes where a
// spend counter lives: the store answers (an error for a value it cannot
// read, never $0), never panics, and leaves such a value alone.
func FuzzGarbageInASpendCounterNeverPanics(f *testing.F) {
	f.Add([]byte{0, 0x30, 0xe9, 0x5a, 0, 0, 0, 0, 0, 0, 0, 9}, int64(5))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, int64(1<<62))
	f.Add([]byte("x"), int64(-1))
	f.Fuzz(func(t *testing.T, value []byte, cost int64) {
		fx := newFixture(0)
		const key = "tb|s|api_key_day|k-alice"
		require.NoError(t, fx.sd.Set(key, value, 0))
		sp := spendAt(t, sep30Last, map[spend.Slot]money.Amount{spend.KeyDay: 5 * usd, spend.TeamMonth: usd})
		out := admit(t, fx.store, limit.Plan{Spend: sp})
		if out.Admitted() {
			h := out.Hold
			h.SpendCost = money.Amount(cost)
			fx.store.Settle(h, 0)
		}
		if len(value) != 12 {
			require.Error(t, out.Err)
			got, _, err := fx.sd.Get(key)
			require.NoError(t, err)
			require.Equal(t, string(value), string(got))
		}
	})
}
