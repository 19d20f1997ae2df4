package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

func TestTokenRefusalReleasesEarlierDimensionsAndKeepsRequestUnits(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			rq, cc, tk1, tk2 := uniq("rq"), uniq("cc"), uniq("tk1"), uniq("tk2")
			rl := minute(10)
			p := limit.Plan{
				Requests: []limit.Op{reqOp(rq, "api_key", rl), concOp(cc, "global", 2)},
				Tokens:   []limit.Op{tokOp(tk1, "api_key", 500, minute(1000), day(5000)), tokOp(tk2, "model", 500, minute(400))},
			}
			o := admit(t, e, p)
			require.False(t, o.Admitted())
			require.NotNil(t, o.Refusal)
			require.Equal(t, limit.DimModel, o.Refusal.Dimension)
			require.Equal(t, limit.PeriodMinute, o.Refusal.Budget)
			require.Empty(t, o.Hold.ID)
			require.InDelta(t, 9, level(t, e, rq, rl), 0.5, "request units stay consumed")
			require.InDelta(t, 2, level(t, e, cc, p.Requests[1].Limits[0]), 0.01, "concurrency given back")
			require.InDelta(t, 1000, level(t, e, tk1, minute(1000)), 0.5, "earlier token op given back")
			require.InDelta(t, 5000, level(t, e, tk1, day(5000)), 0.5)
		})
	}
}

func TestRequestRefusalTakesNothingAnywhere(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			rq1, rq2, tk := uniq("rq1"), uniq("rq2"), uniq("tk")
			zero := limit.Limit{Budget: limit.PeriodSecond, Capacity: 0}
			p := limit.Plan{
				Requests: []limit.Op{reqOp(rq1, "api_key", minute(10)), reqOp(rq2, "global", zero)},
				Tokens:   []limit.Op{tokOp(tk, "api_key", 100, minute(1000))},
			}
			o := admit(t, e, p)
			require.False(t, o.Admitted())
			require.Equal(t, limit.DimGlobal, o.Refusal.Dimension)
			require.Equal(t, int64(1), o.Refusal.RetryAfterSec, "zero allowance waits one period")
			require.False(t, o.Refusal.Private)
			require.Equal(t, limit.Level{}, o.Refusal.Level, "shared bucket level withheld")
			require.Empty(t, o.Levels)
			require.InDelta(t, 10, level(t, e, rq1, minute(10)), 0.5)
			require.InDelta(t, 1000, level(t, e, tk, minute(1000)), 0.5)
		})
	}
}

func TestMinuteRefusalNeverDrainsTheDayBudget(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk := uniq("tk")
			o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 300, minute(200), day(10000))}})
			require.False(t, o.Admitted())
			require.Equal(t, limit.PeriodMinute, o.Refusal.Budget)
			require.InDelta(t, 10000, level(t, e, tk, day(10000)), 0.5)
		})
	}
}

func TestAdmissionReportsOnlyPrivateLevels(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			mine := tokOp(uniq("tk"), "api_key", 100, minute(1000), day(5000))
			mine.Private = true
			p := limit.Plan{Tokens: []limit.Op{mine, tokOp(uniq("tk"), "global", 100, minute(1000))}}
			o := admit(t, e, p)
			require.True(t, o.Admitted())
			require.Len(t, o.Levels, 2)
			require.Equal(t, limit.DimAPIKey, o.Levels[0].Dimension)
			require.Equal(t, limit.PeriodMinute, o.Levels[0].Budget)
			require.Equal(t, int64(900), o.Levels[0].Level.Remaining)
			require.Equal(t, int64(4900), o.Levels[1].Level.Remaining)
			require.Greater(t, o.Levels[0].Level.ResetUnix, time.Now().Unix()+1000, "100 tokens at 0.001/s")
			require.Len(t, o.Hold.Entries, 2)
			require.Equal(t, int64(100), o.Hold.Reserved())
		})
	}
}

func TestPrivateRefusalCarriesSizeAwareRetryAndLevel(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			op := tokOp(uniq("tk"), "api_key", 0, limit.Limit{Budget: limit.PeriodMinute, Capacity: 600, RefillPerSec: 10})
			op.Private = true
			op.Amount = 500
			require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{op}}).Admitted())
			o := admit(t, e, limit.Plan{Tokens: []limit.Op{op}})
			require.False(t, o.Admitted())
			// level ~100 after the first take: (500-100)/10 = 40 s
			require.InDelta(t, 40, o.Refusal.RetryAfterSec, 1)
			require.True(t, o.Refusal.Private)
			require.InDelta(t, 100, o.Refusal.Level.Remaining, 1)
			op.Amount = 1000
			o = admit(t, e, limit.Plan{Tokens: []limit.Op{op}})
			require.Equal(t, int64(100), o.Refusal.RetryAfterSec, "larger than the bucket: whole cost / refill")
		})
	}
}

func TestSettleReplacesReservationWithUsage(t *testing.T) {
	tests := []struct {
		name       string
		overage    limit.Overage
		startLevel int64 // capacity; the hold takes 400
		actual     int64
		want       float64
	}{
		{"less usage refunds the difference", limit.OverageDebt, 1000, 100, 900},
		{"more usage charges the overage", limit.OverageDebt, 1000, 700, 300},
		{"debt charges an overage the bucket cannot cover in full, below zero", limit.OverageDebt, 500, 600, -100},
		{"skip: an overage the bucket cannot cover consumes nothing", limit.OverageSkip, 500, 600, 100},
		{"skip: an overage the bucket covers is charged", limit.OverageSkip, 1000, 700, 300},
		{"overage exactly covered drains to zero", limit.OverageDebt, 500, 500, 0},
		{"skip: overage exactly covered drains to zero", limit.OverageSkip, 500, 500, 0},
	}
	for _, e := range envs(t) {
		for _, tt := range tests {
			t.Run(e.name+"/"+tt.name, func(t *testing.T) {
				tk := uniq("tk")
				l := minute(tt.startLevel)
				o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 400, l)}, Overage: tt.overage})
				require.True(t, o.Admitted())
				require.Equal(t, tt.overage, o.Hold.Overage)
				ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk}, tt.actual)
				require.NoError(t, err)
				require.True(t, ended)
				require.InDelta(t, tt.want, level(t, e, tk, l), 0.5)
			})
		}
	}
}

func TestSettleAndReleaseCountOncePerHold(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			tk, cc := uniq("tk"), uniq("cc")
			l := minute(1000)
			p := limit.Plan{Requests: []limit.Op{concOp(cc, "global", 1)}, Tokens: []limit.Op{tokOp(tk, "api_key", 400, l)}}
			o := admit(t, e, p)
			require.True(t, o.Admitted())
			keys := []string{cc, tk}
			ended, err := e.store.Settle(ctx, o.Hold.ID, keys, 100)
			require.NoError(t, err)
			require.True(t, ended)
			for i := 0; i < 2; i++ {
				ended, err = e.store.Settle(ctx, o.Hold.ID, keys, 100)
				require.NoError(t, err)
				require.False(t, ended)
				ended, err = e.store.Release(ctx, o.Hold.ID, keys)
				require.NoError(t, err)
				require.False(t, ended)
			}
			require.InDelta(t, 900, level(t, e, tk, l), 0.5)
			require.InDelta(t, 1, level(t, e, cc, p.Requests[0].Limits[0]), 0.01, "concurrency unit back once, capped")
		})
	}
}

func TestReleaseGivesBackTokensAndConcurrency(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk, cc := uniq("tk"), uniq("cc")
			p := limit.Plan{Requests: []limit.Op{concOp(cc, "global", 1)}, Tokens: []limit.Op{tokOp(tk, "api_key", 400, minute(1000))}}
			o := admit(t, e, p)
			require.True(t, o.Admitted())
			require.False(t, admit(t, e, p).Admitted(), "the one concurrency unit is held")
			ended, err := e.store.Release(context.Background(), o.Hold.ID, []string{cc, tk})
			require.NoError(t, err)
			require.True(t, ended)
			require.InDelta(t, 1000, level(t, e, tk, minute(1000)), 0.5)
			require.True(t, admit(t, e, p).Admitted())
		})
	}
}

func TestNewVersionKeyStartsFromAFullBucket(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			base := uniq("tk")
			op := tokOp(base+":v1", "api_key", 800, minute(1000))
			require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{op}}).Admitted())
			require.False(t, admit(t, e, limit.Plan{Tokens: []limit.Op{op}}).Admitted())
			op.Key = base + ":v2" // a reload changed the parameters' version
			require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{op}}).Admitted())
		})
	}
}

func TestKeysExpireOnceTheBucketWouldBeFull(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			tk, cc := uniq("tk"), uniq("cc")
			l := limit.Limit{Budget: limit.PeriodMinute, Capacity: 60000, RefillPerSec: 1000}
			p := limit.Plan{Requests: []limit.Op{concOp(cc, "global", 5)}, Tokens: []limit.Op{tokOp(tk, "api_key", 5000, l)}}
			o := admit(t, e, p)
			require.True(t, o.Admitted())
			ttl, err := e.c.PTTL(ctx, bucketKey(tk)).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, 4500*time.Millisecond)
			require.LessOrEqual(t, ttl, 6000*time.Millisecond, "5000 tokens at 1000/s plus 1s margin")
			ttl, err = e.c.PTTL(ctx, bucketKey(cc)).Result()
			require.NoError(t, err)
			require.Greater(t, ttl, 47*time.Hour, "a held concurrency unit outlives its hold")
			ended, err := e.store.Release(ctx, o.Hold.ID, []string{cc, tk})
			require.NoError(t, err)
			require.True(t, ended)
			ttl, err = e.c.PTTL(ctx, bucketKey(cc)).Result()
			require.NoError(t, err)
			require.LessOrEqual(t, ttl, time.Second, "a full bucket only waits out the margin")
		})
	}
}

func TestHoldRecordExpiresAfterHoldTTL(t *testing.T) {
	e := newEnv(t, false)
	o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "api_key", 1, minute(10))}})
	ttl, err := e.c.PTTL(context.Background(), holdKey(o.Hold.ID)).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 47*time.Hour)
	require.LessOrEqual(t, ttl, 48*time.Hour)
}

func TestSingleServerAdmitAndSettleAreOneRoundTripEach(t *testing.T) {
	e := newEnv(t, false)
	p := sixDimensionPlan(uniq("bench"), 100)
	o := admit(t, e, p)
	require.True(t, o.Admitted())
	require.Equal(t, int64(1), e.rt.n.Load())
	_, err := e.store.Settle(context.Background(), o.Hold.ID, nil, 50)
	require.NoError(t, err)
	require.Equal(t, int64(2), e.rt.n.Load())
}

func TestScriptIsReloadedAfterScriptFlush(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			require.NoError(t, e.c.ScriptFlush(ctx).Err())
			tk := uniq("tk")
			o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, minute(100))}})
			require.True(t, o.Admitted())
			require.NoError(t, e.c.ScriptFlush(ctx).Err())
			ended, err := e.store.Release(ctx, o.Hold.ID, []string{tk})
			require.NoError(t, err)
			require.True(t, ended)
		})
	}
}

func TestBraceInKeyKeepsBucketAndHoldInOneSlot(t *testing.T) {
	e := newEnv(t, true)
	tk := uniq("}weird{model")
	o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "model", 10, minute(100))}})
	require.True(t, o.Admitted())
	ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk}, 5)
	require.NoError(t, err)
	require.True(t, ended)
	require.InDelta(t, 95, level(t, e, tk, minute(100)), 0.5)
}

// sixDimensionPlan is the benchmark's shape: a request-rate op and six
// token dimensions with minute and day periods, the api_key ones private.
func sixDimensionPlan(id string, amount int64) limit.Plan {
	dims := []string{"global", "client", "api_key", "user", "team", "model"}
	p := limit.Plan{Requests: []limit.Op{{Key: "rq:api_key:" + id, Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Amount: 1, Private: true,
		Limits: []limit.Limit{{Budget: limit.PeriodSecond, Capacity: 1 << 40, RefillPerSec: 1 << 30}}}}}
	for _, d := range dims {
		p.Tokens = append(p.Tokens, limit.Op{Key: "tk:" + d + ":" + id, Kind: limit.KindTokens, Dimension: dimension(d), Amount: amount, Private: d == "api_key",
			Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: 1 << 40, RefillPerSec: 1 << 34}, {Budget: limit.PeriodDay, Capacity: 1 << 45, RefillPerSec: 1 << 30}}})
	}
	return p
}

func TestAJSONHoldRecordFromBeforeThePackedLayoutStillSettlesUnderSkip(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	tk := uniq("tk")
	l := minute(500)
	// what the previous release admitted: 400 taken, a JSON record
	o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 400, l)}})
	require.True(t, o.Admitted())
	legacy := `[{"k":"` + bucketKey(tk) + `","c":3,"a":"400","l":[["minute","500","0.001"]]}]`
	require.NoError(t, e.c.Set(ctx, holdKey(o.Hold.ID), legacy, time.Hour).Err())
	ended, err := e.store.Settle(ctx, o.Hold.ID, []string{tk}, 700)
	require.NoError(t, err)
	require.True(t, ended)
	require.InDelta(t, 100, level(t, e, tk, l), 0.5, "an overage the bucket cannot cover consumes nothing, as when it was admitted")
}

// pexpireCalls is how many PEXPIRE commands the server has run (scripts'
// included).
func pexpireCalls(t *testing.T, e env) int64 {
	t.Helper()
	return cmdCalls(t, e)["pexpire"]
}

func TestABusyBucketExpiresWithinItsMarginWithoutAPexpirePerAdmission(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	tk := uniq("tk")
	// refilled to full within a microsecond: the bucket only needs the margin
	l := limit.Limit{Budget: limit.PeriodMinute, Capacity: 1000, RefillPerSec: 1e9}
	p := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}
	before := pexpireCalls(t, e)
	for i := 0; i < 20; i++ {
		require.True(t, admit(t, e, p).Admitted())
		ttl, err := e.c.PTTL(ctx, bucketKey(tk)).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, 400*time.Millisecond, "admission %d", i)
		require.LessOrEqual(t, ttl, time.Second+time.Millisecond, "admission %d: 1 ms to refill 10 tokens, plus the margin", i)
	}
	require.Less(t, pexpireCalls(t, e)-before, int64(20), "the deadline is moved only when it leaves its window")
}

func TestAnOpWithThreeOrFourPeriodsIsTakenAndSettledOnEach(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk, rq := uniq("tk"), uniq("rq")
			ls := []limit.Limit{{Budget: limit.PeriodSecond, Capacity: 900, RefillPerSec: 0.001}, minute(1000), day(5000), {Budget: limit.PeriodConcurrent, Capacity: 7000, RefillPerSec: 0.0001}}
			p := limit.Plan{Requests: []limit.Op{reqOp(rq, "api_key", ls[:3]...)}, Tokens: []limit.Op{tokOp(tk, "api_key", 400, ls...)}}
			o := admit(t, e, p)
			require.True(t, o.Admitted())
			ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk}, 100)
			require.NoError(t, err)
			require.True(t, ended)
			for i, want := range []float64{800, 900, 4900, 6900} {
				require.InDelta(t, want, level(t, e, tk, ls[i]), 0.5, ls[i].Budget)
			}
			for i, want := range []float64{899, 999, 4999} {
				require.InDelta(t, want, level(t, e, rq, ls[i]), 0.5, ls[i].Budget)
			}
		})
	}
}

func TestAppendBucketKeyWritesBucketKey(t *testing.T) {
	for _, k := range []string{"tb|t|api_key|v1|abc", "}weird{model", "{", "", "plain"} {
		require.Equal(t, bucketKey(k), string(appendBucketKey([]byte{}, k)), k)
	}
}
