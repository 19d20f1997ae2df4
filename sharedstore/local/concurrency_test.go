package local_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

// interleave runs another worker's admission just before this worker's
// first write of key, the window in which both saw the bucket missing.
type interleave struct {
	*localtest.SharedData
	key   string
	other func()
	once  sync.Once
}

func (i *interleave) Set(key string, value []byte, cas uint32) error {
	if key == i.key {
		i.once.Do(i.other)
	}
	return i.SharedData.Set(key, value, cas)
}

func TestTwoWorkersCreatingOneBucketLoseNeitherReservation(t *testing.T) {
	sd := localtest.New()
	c := &clock{t: 1_700_000_000 * sec}
	op := tokens("api_key", "h1", 100, minute(600), day(6000))
	plan := limit.Plan{Tokens: []limit.Op{op}}
	worker2 := local.New(sd, c.now, 10)
	racy := &interleave{SharedData: sd, key: op.Key, other: func() {
		require.True(t, admit(t, worker2, plan).Admitted())
	}}
	worker1 := local.New(racy, c.now, 10)

	require.True(t, admit(t, worker1, plan).Admitted())
	require.Equal(t, []float64{400, 5800}, levels(t, sd, op), "both creations are counted: the first write was not overwritten")
	count, _, err := sd.Get("tb|n|token_budget|tb|t|api_key|v1")
	require.NoError(t, err)
	require.Equal(t, "1", string(count), "the bucket is counted once in its map")
}

func TestConcurrentWorkersNeverAdmitMoreThanCapacityNorLoseAnUpdate(t *testing.T) {
	const workers, attempts, amount = 8, 200, 7
	sd := localtest.New()
	c := &clock{t: 1_700_000_000 * sec} // frozen: refill adds nothing
	global := tokens("global", "", amount, minute(1000), day(1500))
	key := tokens("api_key", "h1", amount, minute(5000), day(900))
	conc := inflight("global", "", 3)
	rps := requests("global", "", minute(100000))
	plan := limit.Plan{Requests: []limit.Op{rps, conc}, Tokens: []limit.Op{global, key}}

	r := raceWorkers(sd, c, plan, workers, attempts, amount)

	require.Zero(t, r.errored)
	n := r.admitted
	require.Positive(t, n)
	require.Equal(t, int64(workers*attempts), n+r.refused)
	require.LessOrEqual(t, n*amount, int64(900), "never more than the smallest capacity")
	require.Equal(t, []float64{float64(1000 - n*amount), float64(1500 - n*amount)}, levels(t, sd, global), "no lost update")
	require.Equal(t, []float64{float64(5000 - n*amount), float64(900 - n*amount)}, levels(t, sd, key), "no lost update")
	require.Equal(t, []float64{3}, levels(t, sd, conc), "every in-flight unit came back")
	rpsLeft := levels(t, sd, rps)
	require.Equal(t, float64(100000-n-r.tokenRefused), rpsLeft[0],
		"each request that passed the request checks was counted once; a concurrency refusal gave its count back")
}

// raced is what raceWorkers' admissions came to.
type raced struct{ admitted, refused, tokenRefused, errored int64 }

// raceWorkers runs workers goroutines, each a Store of its own (one per
// worker VM) on the one shared data, each admitting plan attempts times and
// settling every admission on amount (its reservation), then flushing.
func raceWorkers(sd local.SharedData, c *clock, plan limit.Plan, workers, attempts int, amount int64) raced {
	var admitted, refused, tokenRefused, errored atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s := local.New(sd, c.now, 100)
			for range attempts {
				var out limit.Outcome
				s.Admit(plan, func(o limit.Outcome) { out = o })
				switch {
				case out.Err != nil:
					errored.Add(1)
				case out.Admitted():
					admitted.Add(1)
					s.Settle(out.Hold, amount) // usage equals the reservation
				default:
					refused.Add(1)
					if out.Refusal.Kind == limit.KindTokens {
						tokenRefused.Add(1) // its request was counted
					}
				}
			}
			s.Flush()
		})
	}
	wg.Wait()
	return raced{admitted.Load(), refused.Load(), tokenRefused.Load(), errored.Load()}
}

// TestBucketLevelsAreExplainedBySettledUsageAlone runs a random mix of
// admissions, settlements, releases and refusals on a frozen clock, then
// ends every hold: each bucket must hold its capacity minus exactly what
// was settled on it. It runs under both overage rules: with debt every
// settlement is charged whole (levels may go below zero); with skip an
// overage a bucket cannot cover consumes nothing there.
func TestBucketLevelsAreExplainedBySettledUsageAlone(t *testing.T) {
	for _, overage := range []limit.Overage{limit.OverageDebt, limit.OverageSkip} {
		for seed := uint64(1); seed <= 20; seed++ {
			levelsExplainedBySettledUsage(t, overage, seed)
		}
	}
}

func levelsExplainedBySettledUsage(t *testing.T, overage limit.Overage, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	f := newFixture(0)
	ids := []string{"a", "b", "c"}
	type live struct {
		hold   limit.Hold
		ops    []limit.Op
		amount int64
	}
	var holds []live
	charged := map[string]float64{} // key|period index → tokens settled
	model := map[string]float64{}   // key|period index → expected level
	limitsOf := map[string][]limit.Limit{}
	planFor := func(id string, amount int64) []limit.Op {
		return []limit.Op{
			tokens("global", "", amount, minute(3000), day(4000)),
			tokens("api_key", id, amount, minute(900), day(1500)),
			tokens("team", "t", amount, minute(2000)),
		}
	}
	lvl := func(op limit.Op, i int) string { return op.Key + "|" + string(rune('0'+i)) }
	for step := 0; step < 300; step++ {
		if len(holds) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(holds))
			h := holds[i]
			holds = append(holds[:i], holds[i+1:]...)
			if rng.IntN(3) == 0 {
				f.store.Release(h.hold)
				for _, op := range h.ops {
					for j := range op.Limits {
						model[lvl(op, j)] += float64(h.amount)
					}
				}
				continue
			}
			actual := rng.Int64N(2*h.amount + 1)
			f.store.Settle(h.hold, actual)
			for _, op := range h.ops {
				for j := range op.Limits {
					k := lvl(op, j)
					switch d := float64(actual - h.amount); {
					case d <= 0, overage == limit.OverageDebt:
						model[k] -= d
						charged[k] += float64(actual)
					case model[k] >= d:
						model[k] -= d
						charged[k] += float64(actual)
					default: // the overage this bucket cannot cover consumes nothing
						charged[k] += float64(h.amount)
					}
				}
			}
			continue
		}
		amount := 1 + rng.Int64N(400)
		ops := planFor(ids[rng.IntN(len(ids))], amount)
		for _, op := range ops {
			limitsOf[op.Key] = op.Limits
			for j, l := range op.Limits {
				if _, ok := model[lvl(op, j)]; !ok {
					model[lvl(op, j)] = float64(l.Capacity)
				}
			}
		}
		fits := true
		for _, op := range ops {
			for j := range op.Limits {
				fits = fits && model[lvl(op, j)] >= float64(amount) && model[lvl(op, j)] > 0
			}
		}
		out := admit(t, f.store, limit.Plan{Tokens: ops, Overage: overage})
		require.NoError(t, out.Err)
		require.Equal(t, fits, out.Admitted(), "overage %d seed %d step %d", overage, seed, step)
		require.Equal(t, overage, out.Hold.Overage, "the hold records the plan's rule")
		if out.Admitted() {
			for _, op := range ops {
				for j := range op.Limits {
					model[lvl(op, j)] -= float64(amount)
				}
			}
			holds = append(holds, live{hold: out.Hold, ops: ops, amount: amount})
		}
	}
	for _, h := range holds {
		f.store.Release(h.hold)
	}
	f.store.Flush() // refunds reach shared data on the tick
	for key, limits := range limitsOf {
		got := levels(t, f.sd, limit.Op{Key: key, Limits: limits})
		if got == nil {
			continue // never admitted anything, never created
		}
		for j, l := range limits {
			k := key + "|" + string(rune('0'+j))
			require.InDelta(t, float64(l.Capacity)-charged[k], got[j], 1e-6, "overage %d seed %d bucket %s", overage, seed, k)
		}
	}
}
