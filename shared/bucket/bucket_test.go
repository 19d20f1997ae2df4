package bucket

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

const sec = int64(1e9)

var (
	minute = limit.Limit{Budget: limit.PeriodMinute, Capacity: 600, RefillPerSec: 10}
	day    = limit.Limit{Budget: limit.PeriodDay, Capacity: 86400, RefillPerSec: 1}
	zero   = limit.Limit{Budget: limit.PeriodMinute}
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
	limits := []limit.Limit{minute, day}
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

func TestZeroAllowanceRefusesEveryAmount(t *testing.T) {
	s := []State{Fresh(zero, 0)}
	require.Equal(t, 0, Take(s, []limit.Limit{zero}, 1, 100*sec))
	require.Equal(t, 0, Take(s, []limit.Limit{zero}, 0, 100*sec), "a zero hold needs a level above zero")
	require.Equal(t, int64(60), RetryAfterSec(zero, s[0], 1))
}

func TestAZeroHoldIsRefusedOnABucketAtOrBelowZero(t *testing.T) {
	cases := []struct {
		name    string
		level   float64
		amount  int64
		refused int
	}{
		{"a zero hold on a bucket with tokens left is admitted", 0.5, 0, -1},
		{"a zero hold on an empty bucket is refused", 0, 0, 0},
		{"a zero hold on an indebted bucket is refused", -250, 0, 0},
		{"a positive hold on an indebted bucket is refused", -250, 1, 0},
		{"a positive hold the level covers is admitted", 100, 100, -1},
		{"a positive hold above the level is refused", 99.5, 100, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := []State{{Level: c.level, Last: 0}}
			require.Equal(t, c.refused, Take(s, []limit.Limit{minute}, c.amount, 0))
			want := c.level
			if c.refused < 0 {
				want -= float64(c.amount)
			}
			require.InDelta(t, want, s[0].Level, 1e-9, "a refusal takes nothing")
			require.Equal(t, c.refused < 0, admits(c.level, float64(max(c.amount, 0))))
		})
	}
}

func TestAnIndebtedPeriodRefusesWithoutDrainingTheOther(t *testing.T) {
	s := []State{{Level: 600, Last: 0}, {Level: -10, Last: 0}}
	require.Equal(t, 1, Take(s, []limit.Limit{minute, day}, 0, 0))
	require.InDelta(t, 600, s[0].Level, 1e-9)
	require.InDelta(t, -10, s[1].Level, 1e-9)
}

func TestGiveAndReleaseAreCappedAtCapacity(t *testing.T) {
	s := []State{{Level: 550, Last: 0}}
	Give(s, []limit.Limit{minute}, 100, 0)
	require.InDelta(t, 600, s[0].Level, 1e-9)
}

func TestSettleRefundsOrChargesUnderBothOverageRules(t *testing.T) {
	cases := []struct {
		name             string
		level            float64
		reserved, actual int64
		after            float64
	}{
		{"less usage refunds the difference", 100, 300, 120, 280},
		{"refund is capped at capacity", 500, 300, 0, 600},
		{"more usage charges the overage", 100, 300, 350, 50},
		{"exact usage changes nothing", 100, 300, 300, 100},
		{"negative usage counts as none", 100, 300, -5, 400},
		{"a refund repays part of a debt", -200, 300, 100, 0},
	}
	for _, overage := range []limit.Overage{limit.OverageDebt, limit.OverageSkip} {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				s := []State{{Level: c.level, Last: 0}}
				Settle(s, []limit.Limit{minute}, c.reserved, c.actual, 0, overage)
				require.InDelta(t, c.after, s[0].Level, 1e-9)
			})
		}
	}
}

func TestADebtIsChargedWholeAndRefillRepaysIt(t *testing.T) {
	limits := []limit.Limit{minute, day}
	cases := []struct {
		name             string
		levels           [2]float64
		reserved, actual int64
		after            [2]float64
	}{
		{"an overage beyond the level goes below zero", [2]float64{30, 86400}, 300, 1000, [2]float64{-670, 85700}},
		{"every period is charged the whole overage", [2]float64{30, 50}, 0, 100_000, [2]float64{-99_970, -99_950}},
		{"a debt deepens an existing debt", [2]float64{-100, 0}, 0, 50, [2]float64{-150, -50}},
		{"an overage the level covers is charged as before", [2]float64{500, 500}, 100, 300, [2]float64{300, 300}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := []State{{Level: c.levels[0], Last: 0}, {Level: c.levels[1], Last: 0}}
			Settle(s, limits, c.reserved, c.actual, 0, limit.OverageDebt)
			require.InDelta(t, c.after[0], s[0].Level, 1e-9)
			require.InDelta(t, c.after[1], s[1].Level, 1e-9)
		})
	}

	t.Run("refill repays the debt at the normal rate, then stops at capacity", func(t *testing.T) {
		s := []State{{Level: 30, Last: 0}}
		Settle(s, []limit.Limit{minute}, 0, 1030, 0, limit.OverageDebt)
		require.InDelta(t, -1000, s[0].Level, 1e-9)
		require.Equal(t, 0, Take(s, []limit.Limit{minute}, 0, 99*sec), "still in debt after 99 s")
		require.InDelta(t, -10, s[0].Level, 1e-9)
		require.Equal(t, -1, Take(s, []limit.Limit{minute}, 0, 101*sec), "above zero after 101 s")
		s[0].Refill(minute, 1000*sec)
		require.InDelta(t, 600, s[0].Level, 1e-9)
	})
}

func TestSkipConsumesNothingFromABucketThatCannotCoverTheOverage(t *testing.T) {
	limits := []limit.Limit{minute, day}
	cases := []struct {
		name             string
		levels           [2]float64
		reserved, actual int64
		after            [2]float64
	}{
		{"an overage beyond the level consumes nothing there", [2]float64{30, 86400}, 300, 1000, [2]float64{30, 85700}},
		{"both periods short: neither is touched", [2]float64{30, 50}, 0, 100_000, [2]float64{30, 50}},
		{"exactly covered drains to zero", [2]float64{700, 700}, 300, 1000, [2]float64{0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := []State{{Level: c.levels[0], Last: 0}, {Level: c.levels[1], Last: 0}}
			Settle(s, limits, c.reserved, c.actual, 0, limit.OverageSkip)
			require.InDelta(t, c.after[0], s[0].Level, 1e-9)
			require.InDelta(t, c.after[1], s[1].Level, 1e-9)
		})
	}
}

func TestRetryAfterCountsTheDebt(t *testing.T) {
	cases := []struct {
		name   string
		level  float64
		amount int64
		want   int64
	}{
		{"the debt is added to the shortfall", -400, 100, 50},
		{"a zero hold waits until the level is above zero", -400, 0, 41},
		{"a zero hold on a fractional debt rounds up", -0.5, 0, 1},
		{"a zero hold on an empty bucket waits at least a second", 0, 0, 1},
		{"without debt the shortfall alone counts", 50, 100, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := RetryAfterSec(minute, State{Level: c.level}, c.amount)
			require.Equal(t, c.want, got)
			// After the wait the period admits the same request.
			s := []State{{Level: c.level, Last: 0}}
			require.Equal(t, -1, Take(s, []limit.Limit{minute}, c.amount, got*sec))
			if got > 1 {
				s = []State{{Level: c.level, Last: 0}}
				require.Equal(t, 0, Take(s, []limit.Limit{minute}, c.amount, (got-1)*sec), "one second less is not enough")
			}
		})
	}
}

func TestARequestLargerThanTheBucketSaysSo(t *testing.T) {
	cases := []struct {
		name    string
		limit   limit.Limit
		level   float64
		amount  int64
		exceeds bool
		retry   int64
	}{
		{"larger than capacity: its whole cost, and it never fits", minute, 600, 1200, true, 120},
		{"larger than capacity on an indebted bucket: still its whole cost", minute, -5000, 1200, true, 120},
		{"exactly the capacity fits once whole", minute, 0, 600, false, 60},
		{"any positive amount exceeds a zero allowance", zero, 0, 1, true, 60},
		{"a zero hold does not exceed a zero allowance", zero, 0, 0, false, 60},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.exceeds, ExceedsCapacity(c.limit, c.amount))
			require.Equal(t, c.retry, RetryAfterSec(c.limit, State{Level: c.level}, c.amount))
		})
	}
}

func TestRetryAfterIsSizeAware(t *testing.T) {
	conc := limit.Limit{Budget: limit.PeriodConcurrent, Capacity: 2}
	cases := []struct {
		name   string
		limit  limit.Limit
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
		{"day without refill waits a day", limit.Limit{Budget: limit.PeriodDay}, 0, 1, 86400},
		{"tiny refill is clamped, not overflowed", limit.Limit{Budget: limit.PeriodDay, Capacity: 1 << 62, RefillPerSec: 1e-300}, 0, 1 << 62, maxRetryAfterSec},
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
		limit     limit.Limit
		level     float64
		remaining int64
		reset     int64
	}{
		{"full bucket resets now", minute, 600, 600, 1000},
		{"drawn bucket resets after refilling the gap", minute, 399.5, 399, 1021},
		{"negative level reports zero", minute, -3, 0, 1061},
		{"a debt is repaid before the bucket is whole", minute, -6000, 0, 1660},
		{"no refill resets now", zero, 0, 0, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := LevelOf(c.limit, State{Level: c.level, Last: now}, now)
			require.Equal(t, limit.Level{Capacity: c.limit.Capacity, Remaining: c.remaining, ResetUnix: c.reset}, l)
		})
	}
}
