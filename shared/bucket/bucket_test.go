package bucket

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

const sec = int64(1e9)

var (
	minute = sharedstore.Limit{Budget: "minute", Capacity: 600, RefillPerSec: 10}
	day    = sharedstore.Limit{Budget: "day", Capacity: 86400, RefillPerSec: 1}
	zero   = sharedstore.Limit{Budget: "minute"}
)

func TestAFreshBucketIsFull(t *testing.T) {
	s := Fresh(minute, 5*sec)
	require.Equal(t, State{Level: 600, Last: 5 * sec}, s)
}

func TestRefillIsContinuousAndCappedAtCapacity(t *testing.T) {
	cases := []struct {
		name  string
		from  State
		now   int64
		level float64
	}{
		{"half a second refills half the rate", State{Level: 100, Last: 0}, sec / 2, 105},
		{"refill stops at capacity", State{Level: 595, Last: 0}, 10 * sec, 600},
		{"a clock that went back refills nothing", State{Level: 100, Last: 10 * sec}, 5 * sec, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := c.from
			s.Refill(minute, c.now)
			require.InDelta(t, c.level, s.Level, 1e-9)
			require.Equal(t, max(c.now, c.from.Last), s.Last)
		})
	}
}

func TestTakeChargesEveryPeriodOrNone(t *testing.T) {
	limits := []sharedstore.Limit{minute, day}
	cases := []struct {
		name    string
		levels  [2]float64
		amount  int64
		refused int
		after   [2]float64
	}{
		{"fits both", [2]float64{600, 86400}, 100, -1, [2]float64{500, 86300}},
		{"exactly the level fits", [2]float64{100, 100}, 100, -1, [2]float64{0, 0}},
		{"minute refusal leaves the day untouched", [2]float64{50, 86400}, 100, 0, [2]float64{50, 86400}},
		{"day refusal leaves the minute untouched", [2]float64{600, 50}, 100, 1, [2]float64{600, 50}},
		{"first refusing period is named", [2]float64{10, 10}, 100, 0, [2]float64{10, 10}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			states := []State{{Level: c.levels[0], Last: 0}, {Level: c.levels[1], Last: 0}}
			require.Equal(t, c.refused, Take(states, limits, c.amount, 0))
			require.InDelta(t, c.after[0], states[0].Level, 1e-9)
			require.InDelta(t, c.after[1], states[1].Level, 1e-9)
		})
	}
}

func TestZeroAllowanceRefusesAnyPositiveAmountButAdmitsZero(t *testing.T) {
	s := []State{Fresh(zero, 0)}
	require.Equal(t, 0, Take(s, []sharedstore.Limit{zero}, 1, 100*sec))
	require.Equal(t, -1, Take(s, []sharedstore.Limit{zero}, 0, 100*sec))
	require.Equal(t, int64(60), RetryAfterSec(zero, s[0], 1))
}

func TestGiveAndReleaseAreCappedAtCapacity(t *testing.T) {
	s := []State{{Level: 550, Last: 0}}
	Give(s, []sharedstore.Limit{minute}, 100, 0)
	require.InDelta(t, 600, s[0].Level, 1e-9)
}

func TestSettleRefundsChargesOrConsumesNothing(t *testing.T) {
	cases := []struct {
		name             string
		level            float64
		reserved, actual int64
		after            float64
	}{
		{"less usage refunds the difference", 100, 300, 120, 280},
		{"refund is capped at capacity", 500, 300, 0, 600},
		{"more usage charges the overage", 100, 300, 350, 50},
		{"an overage the bucket cannot cover consumes nothing", 30, 300, 350, 30},
		{"exact usage changes nothing", 100, 300, 300, 100},
		{"negative usage counts as none", 100, 300, -5, 400},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := []State{{Level: c.level, Last: 0}}
			Settle(s, []sharedstore.Limit{minute}, c.reserved, c.actual, 0)
			require.InDelta(t, c.after, s[0].Level, 1e-9)
		})
	}
}

func TestRetryAfterIsSizeAware(t *testing.T) {
	conc := sharedstore.Limit{Budget: "concurrent", Capacity: 2}
	cases := []struct {
		name   string
		limit  sharedstore.Limit
		level  float64
		amount int64
		want   int64
	}{
		{"shortfall over the refill rate, rounded up", minute, 95, 100, 1},
		{"bigger shortfall", minute, 0, 250, 25},
		{"request larger than the bucket waits for its whole cost", minute, 600, 1200, 120},
		{"never below one second", minute, 99.99, 100, 1},
		{"no refill waits one period", zero, 0, 5, 60},
		{"concurrency waits one second", conc, 0, 1, 1},
		{"day without refill waits a day", sharedstore.Limit{Budget: "day"}, 0, 1, 86400},
		{"tiny refill is clamped, not overflowed", sharedstore.Limit{Budget: "day", Capacity: 1 << 62, RefillPerSec: 1e-300}, 0, 1 << 62, maxRetryAfterSec},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, RetryAfterSec(c.limit, State{Level: c.level}, c.amount))
		})
	}
}

func TestLevelReportsFloorRemainingAndTheSecondTheBucketIsWhole(t *testing.T) {
	now := 1000 * sec
	cases := []struct {
		name      string
		limit     sharedstore.Limit
		level     float64
		remaining int64
		reset     int64
	}{
		{"full bucket resets now", minute, 600, 600, 1000},
		{"drawn bucket resets after refilling the gap", minute, 399.5, 399, 1021},
		{"negative level reports zero", minute, -3, 0, 1061},
		{"no refill resets now", zero, 0, 0, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := LevelOf(c.limit, State{Level: c.level, Last: now}, now)
			require.Equal(t, sharedstore.Level{Capacity: c.limit.Capacity, Remaining: c.remaining, ResetUnix: c.reset}, l)
		})
	}
}

func TestPeriodSeconds(t *testing.T) {
	for budget, want := range map[string]int64{"second": 1, "minute": 60, "day": 86400, "concurrent": 1, "": 1} {
		require.Equal(t, want, PeriodSeconds(budget), budget)
	}
}
