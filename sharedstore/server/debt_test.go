package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// indebt admits a hold of amount on a fresh bucket of one limit and settles
// it at actual under the debt rule, leaving the bucket at cap-actual.
func indebt(t *testing.T, e env, tk string, l limit.Limit, amount, actual int64) {
	t.Helper()
	o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", amount, l)}})
	require.True(t, o.Admitted())
	ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk}, actual)
	require.NoError(t, err)
	require.True(t, ended)
}

func TestDebtIsChargedOnEveryPeriodOfEveryTokenEntry(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk1, tk2 := uniq("tk1"), uniq("tk2")
			p := limit.Plan{Tokens: []limit.Op{tokOp(tk1, "api_key", 100, minute(300), day(1000)), tokOp(tk2, "global", 100, minute(500))}}
			o := admit(t, e, p)
			require.True(t, o.Admitted())
			ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk1, tk2}, 800)
			require.NoError(t, err)
			require.True(t, ended)
			require.InDelta(t, -500, level(t, e, tk1, minute(300)), 0.5)
			require.InDelta(t, 200, level(t, e, tk1, day(1000)), 0.5)
			require.InDelta(t, -300, level(t, e, tk2, minute(500)), 0.5)
		})
	}
}

func TestAnIndebtedBucketRefusesEveryTokenOpIncludingZeroHolds(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk, rq := uniq("tk"), uniq("rq")
			l := minute(500)
			indebt(t, e, tk, l, 400, 700)
			for _, amount := range []int64{0, 1, 100} {
				o := admit(t, e, limit.Plan{Requests: []limit.Op{reqOp(rq, "api_key", minute(10))},
					Tokens: []limit.Op{tokOp(tk, "api_key", amount, l)}})
				require.False(t, o.Admitted(), "amount %d", amount)
				require.Equal(t, limit.KindTokens, o.Refusal.Kind)
			}
			require.InDelta(t, -200, level(t, e, tk, l), 0.5, "refusals take nothing")
			require.InDelta(t, 7, level(t, e, rq, minute(10)), 0.5, "request-count ops keep their rule: each took its unit")
		})
	}
}

func TestAZeroHoldIsRefusedAtLevelZeroAndAdmittedAboveIt(t *testing.T) {
	tests := []struct {
		name     string
		capacity int64
		take     int64 // a first hold that leaves capacity-take
		admitted bool
	}{
		{"a drained bucket refuses a zero hold", 500, 500, false},
		{"a zero-capacity bucket refuses a zero hold", 0, 0, false},
		{"one token left admits a zero hold", 500, 499, true},
		{"a full bucket admits a zero hold", 500, 0, true},
	}
	for _, e := range envs(t) {
		for _, tt := range tests {
			t.Run(e.name+"/"+tt.name, func(t *testing.T) {
				tk := uniq("tk")
				// no refill, so a drained level stays exactly zero
				l := limit.Limit{Budget: limit.PeriodMinute, Capacity: tt.capacity}
				if tt.take > 0 {
					require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", tt.take, l)}}).Admitted())
				}
				o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 0, l)}})
				require.Equal(t, tt.admitted, o.Admitted())
				if !tt.admitted {
					require.Equal(t, int64(60), o.Refusal.RetryAfterSec, "a bucket that never refills asks for its period")
					require.False(t, o.Refusal.ExceedsCapacity)
				}
			})
		}
	}
}

func TestRequestAndConcurrencyOpsKeepTheirRuleOnAZeroLevel(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			rq, cc := uniq("rq"), uniq("cc")
			// one unit left each: admitted, leaving the buckets at zero
			p := limit.Plan{Requests: []limit.Op{reqOp(rq, "api_key", minute(1)), concOp(cc, "global", 1)}}
			require.True(t, admit(t, e, p).Admitted())
			require.InDelta(t, 0, level(t, e, rq, minute(1)), 0.5)
		})
	}
}

func TestRetryAfterCountsTheDebt(t *testing.T) {
	tests := []struct {
		name   string
		amount int64
		want   int64 // seconds at 10 tokens/s from a level of -200
	}{
		{"a request waits for its amount plus the debt", 100, 30},
		{"a zero hold waits until the level is above zero", 0, 20},
	}
	for _, e := range envs(t) {
		for _, tt := range tests {
			t.Run(e.name+"/"+tt.name, func(t *testing.T) {
				tk := uniq("tk")
				l := limit.Limit{Budget: limit.PeriodMinute, Capacity: 600, RefillPerSec: 10}
				op := tokOp(tk, "api_key", 600, l)
				op.Private = true
				o := admit(t, e, limit.Plan{Tokens: []limit.Op{op}})
				require.True(t, o.Admitted())
				ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk}, 800)
				require.NoError(t, err)
				require.True(t, ended)
				op.Amount = tt.amount
				o = admit(t, e, limit.Plan{Tokens: []limit.Op{op}})
				require.False(t, o.Admitted())
				// the level refills at 10/s while the test runs: allow a second
				require.InDelta(t, tt.want, o.Refusal.RetryAfterSec, 1)
				require.False(t, o.Refusal.ExceedsCapacity)
				require.Equal(t, int64(0), o.Refusal.Level.Remaining, "a level shown to the caller never goes below zero")
				require.InDelta(t, time.Now().Unix()+80, o.Refusal.Level.ResetUnix, 2, "whole again once the debt and the capacity are refilled")
			})
		}
	}
}

func TestARequestLargerThanTheBucketExceedsCapacity(t *testing.T) {
	tests := []struct {
		name    string
		amount  int64
		exceeds bool
		retry   int64 // whole cost / refill when it exceeds
	}{
		{"larger than capacity", 30000, true, 90},
		{"exactly the capacity", 20000, false, 0},
		{"smaller than capacity", 100, false, 0},
	}
	for _, e := range envs(t) {
		for _, tt := range tests {
			t.Run(e.name+"/"+tt.name, func(t *testing.T) {
				tk := uniq("tk")
				l := limit.Limit{Budget: limit.PeriodMinute, Capacity: 20000, RefillPerSec: 20000.0 / 60}
				// drain the bucket so every amount is refused
				require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 20000, l)}}).Admitted())
				o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", tt.amount, l)}})
				require.False(t, o.Admitted())
				require.Equal(t, tt.exceeds, o.Refusal.ExceedsCapacity)
				if tt.exceeds {
					require.Equal(t, tt.retry, o.Refusal.RetryAfterSec, "today's figure: its whole cost")
				}
			})
		}
	}
}

func TestAnIndebtedBucketDoesNotExpireBeforeItIsWhole(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk := uniq("tk")
			// 1000 tokens at 100/s, settled at 3000: level -2000, whole after 30 s
			l := limit.Limit{Budget: limit.PeriodMinute, Capacity: 1000, RefillPerSec: 100}
			indebt(t, e, tk, l, 1000, 3000)
			ttl, err := e.c.PTTL(context.Background(), bucketKey(tk)).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, 29*time.Second)
			require.LessOrEqual(t, ttl, 31*time.Second, "30 s of refill plus the 1 s margin")
		})
	}
}

func TestRefillRepaysTheDebtThenAdmitsAgain(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk := uniq("tk")
			// 100 tokens at 1000/s, settled at 400: level -300, above zero after 0.3 s
			l := limit.Limit{Budget: limit.PeriodMinute, Capacity: 100, RefillPerSec: 1000}
			indebt(t, e, tk, l, 100, 400)
			zero := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 0, l)}}
			require.False(t, admit(t, e, zero).Admitted())
			require.Eventually(t, func() bool { return admit(t, e, zero).Admitted() }, 3*time.Second, 50*time.Millisecond)
			require.Greater(t, level(t, e, tk, l), 0.0)
		})
	}
}

func TestAHoldSettlesByTheRuleItWasAdmittedUnder(t *testing.T) {
	tests := []struct {
		name    string
		overage limit.Overage
		want    float64
	}{
		{"a debt hold charges the whole overage", limit.OverageDebt, -200},
		{"a skip hold consumes nothing it cannot cover", limit.OverageSkip, 100},
	}
	for _, e := range envs(t) {
		for _, tt := range tests {
			t.Run(e.name+"/"+tt.name, func(t *testing.T) {
				tk := uniq("tk")
				l := minute(500)
				o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 400, l)}, Overage: tt.overage})
				require.True(t, o.Admitted())
				require.Equal(t, tt.overage, o.Hold.Overage)
				// a later plan of the other rule on the same bucket does not
				// change how the first hold settles
				other := limit.OverageSkip
				if tt.overage == limit.OverageSkip {
					other = limit.OverageDebt
				}
				o2 := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 0, l)}, Overage: other})
				require.True(t, o2.Admitted())
				ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk}, 700)
				require.NoError(t, err)
				require.True(t, ended)
				require.InDelta(t, tt.want, level(t, e, tk, l), 0.5)
			})
		}
	}
}
