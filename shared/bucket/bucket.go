// Package bucket is the token-bucket arithmetic every budget store shares
// (BUCKET_MATH.md): the shared-data backend runs it in the .wasm and the Redis
// scripts mirror it, so a request gets the same answer whichever store holds
// its buckets. Everything is a pure function of the state, the Limit and an
// injected clock in Unix nanoseconds; nothing here allocates.
package bucket

import (
	"math"

	"github.com/tokenbudget/tokenbudget/sharedstore"
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
func Fresh(l sharedstore.Limit, now int64) State {
	return State{Level: float64(l.Capacity), Last: now}
}

// Refill brings the level up to now. A clock that went backwards refills
// nothing and keeps the later time, so refill is never counted twice.
func (s *State) Refill(l sharedstore.Limit, now int64) {
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
func (s *State) add(l sharedstore.Limit, units float64) {
	s.Level += units
	if c := float64(l.Capacity); s.Level > c {
		s.Level = c
	}
}

// Take admits amount against every Limit of one Op at once: it refills them
// all, then takes amount from all of them when each can cover it, or from
// none. It returns the index of the first Limit that could not cover the
// amount, or -1 when admitted. Checking every period before touching any is
// what keeps a minute refusal from draining the day budget.
func Take(states []State, limits []sharedstore.Limit, amount int64, now int64) int {
	if amount < 0 {
		amount = 0
	}
	n := min(len(states), len(limits))
	a := float64(amount)
	refused := -1
	for i := 0; i < n; i++ {
		states[i].Refill(limits[i], now)
		if refused < 0 && states[i].Level < a {
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

// Give returns amount to every Limit (a refusal undoing an earlier
// dimension, a release, a concurrency unit coming back), capped at capacity.
func Give(states []State, limits []sharedstore.Limit, amount int64, now int64) {
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
// every Limit: less refunds the difference, more charges the overage only
// where the bucket can cover all of it (a partial drain would punish the
// bucket for an estimate it had no part in).
func Settle(states []State, limits []sharedstore.Limit, reserved, actual int64, now int64) {
	if actual < 0 {
		actual = 0
	}
	n := min(len(states), len(limits))
	for i := 0; i < n; i++ {
		states[i].Refill(limits[i], now)
		switch {
		case actual < reserved:
			states[i].add(limits[i], float64(reserved-actual))
		case actual > reserved:
			if d := float64(actual - reserved); states[i].Level >= d {
				states[i].Level -= d
			}
		}
	}
}

// PeriodSeconds is how long a period is, which is what a bucket that never
// refills asks a caller to wait.
func PeriodSeconds(budget string) int64 {
	switch budget {
	case "minute":
		return 60
	case "day":
		return 86400
	default: // "second", "concurrent" and anything unknown
		return 1
	}
}

// RetryAfterSec is size-aware: the seconds the refused Limit needs to refill
// this request's own shortfall, or its whole cost when it is larger than the
// bucket (waiting cannot make it fit, but the caller still learns how much
// budget it asks for). At least 1. s must already be refilled to now.
func RetryAfterSec(l sharedstore.Limit, s State, amount int64) int64 {
	if l.RefillPerSec <= 0 || math.IsNaN(l.RefillPerSec) {
		return PeriodSeconds(l.Budget)
	}
	need := float64(amount) - s.Level
	if amount > l.Capacity {
		need = float64(amount)
	}
	return clampSeconds(math.Ceil(need/l.RefillPerSec), 1)
}

// LevelOf is what a caller may learn about its own bucket: the whole units
// left and the Unix second at which the bucket is whole again. s must
// already be refilled to now.
func LevelOf(l sharedstore.Limit, s State, now int64) sharedstore.Level {
	nowSec := float64(now) / 1e9
	reset := nowSec
	if c := float64(l.Capacity); s.Level < c && l.RefillPerSec > 0 {
		reset = nowSec + (c-s.Level)/l.RefillPerSec
	}
	remaining := clampSeconds(math.Floor(s.Level), 0)
	if remaining > l.Capacity {
		remaining = max(l.Capacity, 0)
	}
	return sharedstore.Level{
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
