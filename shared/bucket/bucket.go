// Package bucket is the token-bucket arithmetic every budget store shares
// (docs/bucket-math.md): the shared-data backend runs it in the .wasm and the Redis
// scripts mirror it, so a request gets the same answer whichever store holds
// its buckets. Everything is a pure function of the state, the Limit and an
// injected clock in Unix nanoseconds; nothing here allocates.
package bucket

import (
	"math"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// State is one Limit's bucket: the units available and when they were last
// brought up to date. Keeping the time of the last touch (rather than a
// timer) is what lets a bucket refill lazily, on the next request.
type State struct {
	Level float64 // units available, may be fractional after refill
	Last  int64   // Unix nanoseconds of the last refill
}

// maxRetryAfterSec bounds Retry-After and reset times so a tiny refill rate
// cannot overflow the float-to-int conversion.
const maxRetryAfterSec = 1 << 40

// Fresh is a bucket never seen before: it starts full, so a new caller may
// spend its whole period at once.
func Fresh(l limit.Limit, now int64) State {
	return State{Level: float64(l.Capacity), Last: now}
}

// Refill brings the level up to now. A clock that went backwards refills
// nothing and keeps the later time, so refill is never counted twice.
func (s *State) Refill(l limit.Limit, now int64) {
	if now <= s.Last {
		return
	}
	capacity := float64(l.Capacity)
	if s.Level < capacity && l.RefillPerSec > 0 {
		s.Level += float64(now-s.Last) / 1e9 * l.RefillPerSec
	}
	if s.Level > capacity {
		s.Level = capacity
	}
	s.Last = now
}

// add returns units to the bucket without exceeding its capacity.
func (s *State) add(l limit.Limit, units float64) {
	s.Level += units
	if c := float64(l.Capacity); s.Level > c {
		s.Level = c
	}
}

// Take admits amount against every Limit of one Op at once: it refills them
// all, then takes amount from all of them when each can cover it, or from
// none. It returns the index of the first Limit that refused, or -1 when
// admitted. Checking every period before touching any is what keeps a
// minute refusal from draining the day budget.
//
// A Limit refuses when its level is below amount or at or below zero (see
// Admits), so a zero amount (a hold the filter could not size) never rides
// on a spent or indebted bucket.
func Take(states []State, limits []limit.Limit, amount int64, now int64) int {
	if amount < 0 {
		amount = 0
	}
	n := min(len(states), len(limits))
	a := float64(amount)
	refused := -1
	for i := 0; i < n; i++ {
		states[i].Refill(limits[i], now)
		if refused < 0 && !admits(states[i].Level, a) {
			refused = i
		}
	}
	if refused >= 0 {
		return refused
	}
	for i := 0; i < n; i++ {
		states[i].Level -= a
	}
	return -1
}

// admits is the admission rule of one period: the level covers amount and
// is above zero. The second half only matters for a zero amount: a request
// whose size is unknown is charged its usage afterwards, so letting it in on
// an empty or indebted bucket would make that bucket's refusal optional.
// Request-count and concurrency ops take one unit, for which the rule is
// the plain "level covers amount".
func admits(level, amount float64) bool { return level >= amount && level > 0 }

// Give returns amount to every Limit (a refusal undoing an earlier
// dimension, a release, a concurrency unit coming back), capped at capacity.
func Give(states []State, limits []limit.Limit, amount int64, now int64) {
	if amount <= 0 {
		return
	}
	n := min(len(states), len(limits))
	for i := 0; i < n; i++ {
		states[i].Refill(limits[i], now)
		states[i].add(limits[i], float64(amount))
	}
}

// Settle replaces a reservation of reserved units with the actual usage on
// every Limit. Less usage refunds the difference, capped at capacity. More
// usage depends on overage:
//
//   - OverageDebt charges the whole overage on every Limit: the level may go
//     below zero, refill repays the debt at the normal rate, and the bucket
//     admits nothing until its level is above zero again. A request is never
//     cheaper than what it consumed.
//   - OverageSkip charges the overage only where the bucket can cover all of
//     it, and consumes nothing elsewhere (a partial drain would punish the
//     bucket for an estimate it had no part in).
func Settle(states []State, limits []limit.Limit, reserved, actual int64, now int64, overage limit.Overage) {
	if actual < 0 {
		actual = 0
	}
	if reserved < 0 {
		reserved = 0
	}
	n := min(len(states), len(limits))
	for i := 0; i < n; i++ {
		states[i].Refill(limits[i], now)
		switch {
		case actual < reserved:
			states[i].add(limits[i], float64(reserved-actual))
		case actual > reserved:
			d := float64(actual - reserved)
			if overage != limit.OverageSkip || states[i].Level >= d {
				states[i].Level -= d
			}
		}
	}
}

// RetryAfterSec is size-aware: the seconds the refused Limit needs to refill
// this request's own shortfall (amount - level, so a debt makes the wait
// longer); for a zero amount refused at a level at or below zero, the time
// until the level is above zero. A request larger than the bucket gets its
// whole cost (waiting cannot make it fit, see ExceedsCapacity, but the caller
// still learns how much budget it asks for). At least 1. s must already be
// refilled to now.
func RetryAfterSec(l limit.Limit, s State, amount int64) int64 {
	if l.RefillPerSec <= 0 || math.IsNaN(l.RefillPerSec) {
		return l.Budget.Seconds()
	}
	amount = max(amount, 0)
	if amount > l.Capacity {
		return clampSeconds(math.Ceil(float64(amount)/l.RefillPerSec), 1)
	}
	if amount == 0 {
		// The level must rise strictly above zero: the first whole second
		// after it reaches zero.
		return clampSeconds(math.Floor(-s.Level/l.RefillPerSec)+1, 1)
	}
	return clampSeconds(math.Ceil((float64(amount)-s.Level)/l.RefillPerSec), 1)
}

// ExceedsCapacity reports that amount is larger than the Limit's capacity:
// no wait can make the request fit, so a caller must not retry it as is.
func ExceedsCapacity(l limit.Limit, amount int64) bool { return amount > l.Capacity }

// LevelOf is what a caller may learn about its own bucket: the whole units
// left, never below zero (a debt is not shown as a negative balance), and
// the Unix second at which the bucket is whole again, which includes
// repaying any debt. s must already be refilled to now.
func LevelOf(l limit.Limit, s State, now int64) limit.Level {
	nowSec := float64(now) / 1e9
	reset := nowSec
	if c := float64(l.Capacity); s.Level < c && l.RefillPerSec > 0 {
		reset = nowSec + (c-s.Level)/l.RefillPerSec
	}
	remaining := clampSeconds(math.Floor(s.Level), 0)
	if remaining > l.Capacity {
		remaining = max(l.Capacity, 0)
	}
	return limit.Level{
		Capacity:  l.Capacity,
		Remaining: remaining,
		ResetUnix: clampSeconds(math.Ceil(reset), 0),
	}
}

// clampSeconds converts a non-negative float to int64 without overflow.
func clampSeconds(v float64, floor int64) int64 {
	switch {
	case math.IsNaN(v) || v < float64(floor):
		return floor
	case v > maxRetryAfterSec:
		return maxRetryAfterSec
	}
	return int64(v)
}
