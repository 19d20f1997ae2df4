package local_test

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

// recorded gives a dimension's request-count op and token op one record,
// as the planner does for a dimension with both.
func recorded(r, t limit.Op) (limit.Op, limit.Op) {
	key := "tb|q|" + r.Dimension.String() + "|v1|v1|" + r.Key[len("tb|r|"+r.Dimension.String()+"|v1|"):]
	r.Record, t.Record = key, key
	return r, t
}

// recordPlan is a plan with records on global and api_key, a team with
// token budgets only, a model with request counts only and a concurrency
// op: every kind of op beside a record. Every rate refills a whole number
// of units per second, so levels on a clock of whole seconds are exact
// and the two stores below can be compared to the unit.
func recordPlan(amount int64) limit.Plan {
	gr, gt := recorded(requests("global", "", second(10, 5), minute(120)), tokens("global", "", amount, minute(3000), day(86400)))
	kr, kt := recorded(requests("api_key", "h1", second(3, 1), minute(60)), tokens("api_key", "h1", amount, minute(1200), day(86400)))
	return limit.Plan{
		Requests: []limit.Op{gr, kr, inflight("api_key", "h1", 2), requests("model", "m", minute(240))},
		Tokens:   []limit.Op{gt, kt, tokens("team", "t", amount, minute(1800))},
	}
}

// withoutRecords is plan with every op in a bucket of its own.
func withoutRecords(plan limit.Plan) limit.Plan {
	out := limit.Plan{Overage: plan.Overage}
	for _, op := range plan.Requests {
		op.Record = ""
		out.Requests = append(out.Requests, op)
	}
	for _, op := range plan.Tokens {
		op.Record = ""
		out.Tokens = append(out.Tokens, op)
	}
	return out
}

// countingData counts the shared-data calls a store makes.
type countingData struct {
	*localtest.SharedData
	gets, sets int
}

func (c *countingData) Get(key string) ([]byte, uint32, error) {
	c.gets++
	return c.SharedData.Get(key)
}

func (c *countingData) Set(key string, value []byte, cas uint32) error {
	c.sets++
	return c.SharedData.Set(key, value, cas)
}

func TestARecordTakesBothOfADimensionsOpsInOneGetAndOneSet(t *testing.T) {
	for _, c := range []struct {
		name       string
		plan       limit.Plan
		gets, sets int
	}{
		// Seven ops: two records, a concurrency op, a model's request
		// counts and a team's tokens, each one get and one set.
		{"with records", recordPlan(100), 5, 5},
		{"every op its own bucket", withoutRecords(recordPlan(100)), 7, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			sd := &countingData{SharedData: localtest.New()}
			clk := &clock{t: 1_700_000_000 * sec}
			store := local.New(sd, clk.now, 0)
			out := admit(t, store, c.plan) // creates the buckets
			require.True(t, out.Admitted())
			store.Settle(out.Hold, 100)
			sd.gets, sd.sets = 0, 0
			require.True(t, admit(t, store, c.plan).Admitted())
			require.Equal(t, c.gets, sd.gets)
			require.Equal(t, c.sets, sd.sets)
		})
	}
}

// A record holds the request counts' states, then the tokens': the
// request counts are never given back, a settlement changes only the
// tokens, and a fresh record starts both full.
func TestARecordKeepsRequestCountsAndTokensApart(t *testing.T) {
	fx := newFixture(0)
	plan := recordPlan(500)
	out := admit(t, fx.store, plan)
	require.True(t, out.Admitted())
	fx.store.Settle(out.Hold, 800) // 300 over the reservation: charged at once
	kr := plan.Requests[1]
	value, _, err := fx.sd.Get(kr.Record)
	require.NoError(t, err)
	states := make([]bucket.State, 4)
	require.NoError(t, bucket.Decode(value, states))
	require.Equal(t, []float64{2, 59, 1200 - 800, 86400 - 800},
		[]float64{states[0].Level, states[1].Level, states[2].Level, states[3].Level})
	require.Nil(t, storedStates(t, fx.sd, kr), "the request counts' own key is never written")
	require.Nil(t, storedStates(t, fx.sd, plan.Tokens[1]), "nor the tokens'")
}

// When a map is at max_buckets, a record that would be new is not made:
// each of its ops gets a bucket of its own, in its map when that has room,
// else in a reusable slot, and fails open only when no slot can take it.
func TestANewRecordInAFullMapSplitsIntoBucketsOfTheirOwn(t *testing.T) {
	fx := newFixture(1)
	first, _ := recorded(requests("api_key", "h1", minute(60)), tokens("api_key", "h1", 10, minute(600)))
	_, firstT := recorded(requests("api_key", "h1", minute(60)), tokens("api_key", "h1", 10, minute(600)))
	out := admit(t, fx.store, limit.Plan{Requests: []limit.Op{first}, Tokens: []limit.Op{firstT}})
	require.True(t, out.Admitted())
	require.Empty(t, out.Skipped)

	r, tk := recorded(requests("api_key", "h2", minute(60)), tokens("api_key", "h2", 10, minute(600)))
	plan := limit.Plan{Requests: []limit.Op{r}, Tokens: []limit.Op{tk}}
	out = admit(t, fx.store, plan)
	require.True(t, out.Admitted())
	require.Empty(t, out.Skipped)
	_, _, err := fx.sd.Get(r.Record)
	require.ErrorIs(t, err, local.ErrNotFound)
	require.Equal(t, []float64{59}, slotLevels(t, fx.sd, "tb|o|r|api_key|v1|0", 1))
	require.Equal(t, []float64{590}, slotLevels(t, fx.sd, "tb|o|t|api_key|v1|0", 1))
	require.Len(t, out.Hold.Entries, 1, "the tokens are held in their slot")

	h3r, h3t := recorded(requests("api_key", "h3", minute(60)), tokens("api_key", "h3", 10, minute(600)))
	out = admit(t, fx.store, limit.Plan{Requests: []limit.Op{h3r}, Tokens: []limit.Op{h3t}})
	require.True(t, out.Admitted())
	require.ElementsMatch(t, []string{"requests", "token_budget"}, out.Skipped, "every slot is taken: both fail open")
	require.Empty(t, out.Hold.Entries, "nothing was reserved")

	// Only the request counts' map is full: the tokens get a bucket in
	// their own map, the request counts a slot.
	fx = newFixture(1)
	require.NoError(t, fx.sd.Set("tb|n|requests|tb|r|api_key|v1", []byte("1"), 0))
	out = admit(t, fx.store, plan)
	require.True(t, out.Admitted())
	require.Empty(t, out.Skipped)
	require.Equal(t, []float64{590}, levels(t, fx.sd, tk))
	require.Equal(t, []float64{59}, slotLevels(t, fx.sd, "tb|o|r|api_key|v1|0", 1))
	_, _, err = fx.sd.Get(r.Record)
	require.ErrorIs(t, err, local.ErrNotFound)
}

func TestARecordAnswersAsSeparateBucketsDo(t *testing.T) {
	for _, steps := range [][]byte{
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, // request counts run out
		{200, 200, 200, 200, 6, 200, 200, 200, 2, 2, 2, 2, 2},
		{40, 41, 44, 45, 2, 6, 200, 3, 7, 48, 2, 139, 131, 52, 250, 2, 6, 10},
		{252, 252, 252, 252, 252, 2, 2, 2, 2, 2, 35, 255, 255, 255, 252, 252, 2, 2},
	} {
		recordDifferential(t, steps)
	}
}

// FuzzARecordAnswersAsSeparateBucketsDo drives one store whose plans have
// records and one whose plans do not with the same admissions,
// settlements, releases, clock moves and flushes: every answer, and every
// bucket's level, must be the same.
func FuzzARecordAnswersAsSeparateBucketsDo(f *testing.F) {
	f.Add([]byte{200, 200, 200, 200, 6, 200, 200, 200, 2, 2, 2, 2, 2})
	f.Add([]byte{40, 41, 44, 45, 2, 6, 200, 3, 7, 48, 2, 139, 131, 52, 250, 2, 6, 10})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 512 {
			steps = steps[:512]
		}
		recordDifferential(t, steps)
	})
}

// recordDifferential runs steps on both stores. A step's two low bits say
// what it does, the rest how much: 0 and 1 admit (tokens 37 per unit, so
// refusals of every bucket happen), 2 ends the oldest open hold (settled on
// 50 tokens per unit, or released at 0), 3 moves the clock whole seconds
// and, with the top bit, flushes the pending refunds.
func recordDifferential(t *testing.T, steps []byte) {
	t.Helper()
	clk := &clock{t: 1_700_000_000 * sec}
	sdA, sdB := localtest.New(), localtest.New()
	a, b := local.New(sdA, clk.now, 0), local.New(sdB, clk.now, 0)
	var holdsA, holdsB []limit.Hold
	for i, step := range steps {
		n := int64(step >> 2)
		switch step & 3 {
		case 0, 1:
			plan := recordPlan(n * 37)
			outA, outB := admit(t, a, plan), admit(t, b, withoutRecords(plan))
			require.NoError(t, outA.Err)
			require.NoError(t, outB.Err)
			require.Equal(t, outB.Result, outA.Result, "step %d", i)
			require.Equal(t, outB.Refusal, outA.Refusal, "step %d", i)
			require.Equal(t, sortedLevels(outB.Levels), sortedLevels(outA.Levels), "step %d", i)
			require.Equal(t, heldUnits(outB.Hold), heldUnits(outA.Hold), "step %d", i)
			if outA.Admitted() {
				holdsA, holdsB = append(holdsA, outA.Hold), append(holdsB, outB.Hold)
			}
		case 2:
			if len(holdsA) == 0 {
				continue
			}
			if n == 0 {
				a.Release(holdsA[0])
				b.Release(holdsB[0])
			} else {
				a.Settle(holdsA[0], n*50)
				b.Settle(holdsB[0], n*50)
			}
			holdsA, holdsB = holdsA[1:], holdsB[1:]
		case 3:
			clk.t += (n % 8) * sec
			if step&0x80 != 0 {
				a.Flush()
				b.Flush()
			}
		}
	}
	// Every bucket ends at the same level, pending refunds written.
	a.Flush()
	b.Flush()
	plan := recordPlan(0)
	for _, ops := range [2][]limit.Op{plan.Requests, plan.Tokens} {
		for _, op := range ops {
			require.Equal(t, levelsNow(t, sdB, op.Key, 0, len(op.Limits), op.Limits, clk.t),
				levelsIn(t, sdA, op, plan, clk.t), "%s", op.Key)
		}
	}
}

// levelsIn is op's levels now as the record store keeps them: in its
// record when it has one.
func levelsIn(t *testing.T, sd *localtest.SharedData, op limit.Op, plan limit.Plan, now int64) []float64 {
	if op.Record == "" {
		return levelsNow(t, sd, op.Key, 0, len(op.Limits), op.Limits, now)
	}
	nR := 0
	for _, r := range plan.Requests {
		if r.Record == op.Record {
			nR = len(r.Limits)
		}
	}
	nT := 0
	for _, tk := range plan.Tokens {
		if tk.Record == op.Record {
			nT = len(tk.Limits)
		}
	}
	at := 0
	if op.Kind == limit.KindTokens {
		at = nR
	}
	return levelsNow(t, sd, op.Record, at, nR+nT, op.Limits, now)
}

// levelsNow is the levels of limits, states at to at+len(limits) of the n
// stored at key, refilled to now; a bucket never written is full.
func levelsNow(t *testing.T, sd *localtest.SharedData, key string, at, n int, limits []limit.Limit, now int64) []float64 {
	out := make([]float64, len(limits))
	value, _, err := sd.Get(key)
	if err == local.ErrNotFound {
		for i, l := range limits {
			out[i] = float64(l.Capacity)
		}
		return out
	}
	require.NoError(t, err)
	states := make([]bucket.State, n)
	require.NoError(t, bucket.Decode(value, states))
	for i, l := range limits {
		st := states[at+i]
		st.Refill(l, now)
		out[i] = st.Level
	}
	return out
}

func sortedLevels(levels []limit.OpLevel) []limit.OpLevel {
	out := slices.Clone(levels)
	slices.SortFunc(out, func(x, y limit.OpLevel) int {
		return cmp.Or(cmp.Compare(x.Kind, y.Kind), cmp.Compare(x.Dimension, y.Dimension), cmp.Compare(x.Budget, y.Budget))
	})
	return out
}

// heldUnits is what a hold owns, whichever value holds it.
func heldUnits(h limit.Hold) []string {
	var out []string
	for _, e := range h.Entries {
		out = append(out, e.Kind.String()+" "+e.Dimension.String()+" "+limit.Period(len(e.Limits)).String()+" "+
			string(rune('0'+e.Amount%10)))
	}
	slices.Sort(out)
	return out
}

// Workers racing on one record, from its creation on, lose no update and
// never admit past a capacity: each admission's request count and tokens
// are one compare-and-swap, retried whole on a stale one.
func TestConcurrentWorkersOnOneRecordLoseNoUpdate(t *testing.T) {
	const workers, attempts, amount = 8, 200, 7
	sd := localtest.New()
	c := &clock{t: 1_700_000_000 * sec} // frozen: refill adds nothing
	gr, gt := recorded(requests("global", "", minute(1000)), tokens("global", "", amount, minute(100000), day(200000)))
	plan := limit.Plan{Requests: []limit.Op{gr}, Tokens: []limit.Op{gt}}

	r := raceWorkers(sd, c, plan, workers, attempts, amount)

	require.Zero(t, r.errored)
	n := r.admitted
	require.Equal(t, int64(1000), n, "the request count admits exactly its capacity")
	require.Equal(t, int64(workers*attempts)-n, r.refused)
	value, _, err := sd.Get(gr.Record)
	require.NoError(t, err)
	states := make([]bucket.State, 3)
	require.NoError(t, bucket.Decode(value, states))
	require.Equal(t, []float64{0, float64(100000 - n*amount), float64(200000 - n*amount)},
		[]float64{states[0].Level, states[1].Level, states[2].Level}, "no lost update")
	count, _, err := sd.Get("tb|n|requests|tb|r|global|v1")
	require.NoError(t, err)
	require.Equal(t, "1", string(count), "the record is counted once in each of its maps")
}

func TestTwoWorkersCreatingOneRecordLoseNeitherAdmission(t *testing.T) {
	sd := localtest.New()
	c := &clock{t: 1_700_000_000 * sec}
	r, tk := recorded(requests("api_key", "h1", minute(60)), tokens("api_key", "h1", 100, minute(600), day(6000)))
	plan := limit.Plan{Requests: []limit.Op{r}, Tokens: []limit.Op{tk}}
	worker2 := local.New(sd, c.now, 10)
	racy := &interleave{SharedData: sd, key: r.Record, other: func() {
		require.True(t, admit(t, worker2, plan).Admitted())
	}}
	worker1 := local.New(racy, c.now, 10)

	require.True(t, admit(t, worker1, plan).Admitted())
	require.Equal(t, []float64{58, 400, 5800}, levelsNow(t, sd, r.Record, 0, 3, append(slices.Clone(r.Limits), tk.Limits...), c.t),
		"both admissions are in the record: the first write was not overwritten")
	for _, counter := range []string{"tb|n|requests|tb|r|api_key|v1", "tb|n|token_budget|tb|t|api_key|v1", "tb|n|token_budget_day|tb|t|api_key|v1"} {
		count, _, err := sd.Get(counter)
		require.NoError(t, err)
		require.Equal(t, "1", string(count), "the record is counted once in %s", counter)
	}
}
