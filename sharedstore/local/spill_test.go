package local_test

import (
	"encoding/binary"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

// slot is a reusable slot as shared data holds it: its bucket's levels, the
// holds on it still open, and its owner's key.
type slot struct {
	levels []float64
	opens  uint32
	owner  string
}

func readSlot(t testing.TB, sd *localtest.SharedData, key string, n int) (slot, bool) {
	t.Helper()
	value, _, err := sd.Get(key)
	if err == local.ErrNotFound {
		return slot{}, false
	}
	require.NoError(t, err)
	end := bucket.EncodedLen(n)
	require.GreaterOrEqual(t, len(value), end+4)
	states := make([]bucket.State, n)
	require.NoError(t, bucket.Decode(value[:end], states))
	s := slot{opens: binary.LittleEndian.Uint32(value[end:]), owner: string(value[end+4:])}
	for _, st := range states {
		s.levels = append(s.levels, st.Level)
	}
	return s, true
}

// slotsOf lists the owners of every slot of table, by slot key.
func slotsOf(t testing.TB, sd *localtest.SharedData, table string, n int) map[string]slot {
	t.Helper()
	out := map[string]slot{}
	for _, k := range sd.Keys() {
		if rest, ok := strings.CutPrefix(k, table); ok && rest != "lock" {
			s, _ := readSlot(t, sd, k, n)
			out[k] = s
		}
	}
	return out
}

// fillMap admits n made-up keys, each answered with no usage (as a 401
// upstream is), so the map of op's dimension reaches its ceiling.
func fillMap(t *testing.T, f *fixture, n int, amount int64, limits ...limit.Limit) {
	for i := range n {
		out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{tokens("api_key", "junk"+strconv.Itoa(i), amount, limits...)}})
		require.True(t, out.Admitted())
		f.store.Settle(out.Hold, 0)
	}
	f.store.Flush()
}

func TestAWholeBucketGivesUpItsSlotToANewIdentity(t *testing.T) {
	f := newFixture(2)
	fillMap(t, f, 4, 400, minute(5000)) // two under their own keys, two in slots
	require.Len(t, slotsOf(t, f.sd, "tb|o|t|api_key|v1|", 1), 2, "the map's ceiling is 2, and so is its slots'")

	fresh := tokens("api_key", "real", 400, minute(5000))
	for i := 0; i < 12; i++ {
		out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{fresh}})
		require.Empty(t, out.Skipped, "request %d: a whole junk bucket gave up its slot", i)
		require.True(t, out.Admitted(), "request %d", i)
		f.store.Settle(out.Hold, 400)
	}
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{fresh}})
	require.False(t, out.Admitted(), "the new key's budget is enforced: 12 × 400 of 5,000 spent")
	require.Equal(t, limit.KindTokens, out.Refusal.Kind)

	owners := map[string]int{}
	for _, s := range slotsOf(t, f.sd, "tb|o|t|api_key|v1|", 1) {
		owners[s.owner]++
	}
	require.Equal(t, 1, owners[fresh.Key], "the key has one bucket")
}

func TestABucketWithAHoldOpenIsNeverDropped(t *testing.T) {
	f := newFixture(1)
	fillMap(t, f, 1, 100, minute(600))
	b := tokens("api_key", "b", 100, minute(600))
	held := admit(t, f.store, limit.Plan{Tokens: []limit.Op{b}})
	require.True(t, held.Admitted())
	require.Equal(t, "tb|o|t|api_key|v1|0", held.Hold.Entries[0].Key, "b is in the map's only slot")

	f.clock.t += 120 * sec // b's level is whole again by refill, its hold still open
	c := tokens("api_key", "c", 100, minute(600))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{c}})
	require.True(t, out.Admitted())
	require.Equal(t, []string{"token_budget"}, out.Skipped, "b's slot is not c's while b's hold is open")

	f.store.Settle(held.Hold, 700) // an overage: charged to b's own bucket
	s, _ := readSlot(t, f.sd, "tb|o|t|api_key|v1|0", 1)
	require.Equal(t, slot{levels: []float64{0}, opens: 0, owner: b.Key}, s, "the hold ended once, on the bucket it was taken from")

	f.clock.t += 60 * sec
	out = admit(t, f.store, limit.Plan{Tokens: []limit.Op{c}})
	require.True(t, out.Admitted())
	require.Empty(t, out.Skipped, "b is whole and has no hold: c takes its slot")
	s, _ = readSlot(t, f.sd, "tb|o|t|api_key|v1|0", 1)
	require.Equal(t, slot{levels: []float64{500}, opens: 1, owner: c.Key}, s)
}

// Every way a hold ends on a slot ends it once: a settlement under, at and
// over the reservation, a release, a concurrency unit, and the give-back of
// a refusal; a request-count unit is no hold.
func TestEveryHoldOnASlotEndsExactlyOnce(t *testing.T) {
	for _, c := range []struct {
		rule string
		end  func(s *local.Store, h limit.Hold)
	}{
		{"settled under its reservation", func(s *local.Store, h limit.Hold) { s.Settle(h, 10) }},
		{"settled at its reservation", func(s *local.Store, h limit.Hold) { s.Settle(h, 100) }},
		{"settled over its reservation", func(s *local.Store, h limit.Hold) { s.Settle(h, 300) }},
		{"released", func(s *local.Store, h limit.Hold) { s.Release(h) }},
	} {
		t.Run(c.rule, func(t *testing.T) {
			f := newFixture(1)
			planFor := func(id string) limit.Plan {
				return limit.Plan{Requests: []limit.Op{requests("api_key", id, minute(10)), inflight("api_key", id, 2)},
					Tokens: []limit.Op{tokens("api_key", id, 100, minute(600))}}
			}
			junk := admit(t, f.store, planFor("junk")) // the three maps are at their ceiling
			f.store.Settle(junk.Hold, 0)
			plan := planFor("b")
			rps := plan.Requests[0]
			holds := []limit.Hold{}
			for range 2 {
				out := admit(t, f.store, plan)
				require.True(t, out.Admitted())
				require.Empty(t, out.Skipped)
				holds = append(holds, out.Hold)
			}
			tok, _ := readSlot(t, f.sd, holds[0].Entries[1].Key, 1)
			require.Equal(t, uint32(2), tok.opens)
			cc, _ := readSlot(t, f.sd, holds[0].Entries[0].Key, 1)
			require.Equal(t, uint32(2), cc.opens)
			// A third request is refused by concurrency: its request count
			// is given back, and that ends no hold.
			out := admit(t, f.store, plan)
			require.False(t, out.Admitted())
			require.Equal(t, limit.KindConcurrency, out.Refusal.Kind)
			for _, h := range holds {
				c.end(f.store, h)
			}
			for _, e := range holds[0].Entries {
				s, _ := readSlot(t, f.sd, e.Key, 1)
				require.Zero(t, s.opens, "%s: %s", c.rule, e.Key)
			}
			req, _ := readSlot(t, f.sd, "tb|o|r|api_key|v1|0", 1)
			require.Equal(t, slot{levels: []float64{8}, opens: 0, owner: rps.Key}, req, "request counts hold nothing")
		})
	}
}

func TestATokenRefusalGivesBackASlotsHold(t *testing.T) {
	f := newFixture(1)
	fillMap(t, f, 1, 1, minute(600))
	junk := admit(t, f.store, limit.Plan{Requests: []limit.Op{inflight("api_key", "junk", 5)}})
	f.store.Release(junk.Hold)
	conc := inflight("api_key", "b", 2)
	out := admit(t, f.store, limit.Plan{
		Requests: []limit.Op{conc},
		Tokens:   []limit.Op{tokens("api_key", "b", 1000, minute(600))}, // more than the bucket holds
	})
	require.False(t, out.Admitted())
	s, _ := readSlot(t, f.sd, "tb|o|c|api_key|v1|0", 1)
	require.Equal(t, slot{levels: []float64{2}, opens: 0, owner: conc.Key}, s, "the refusal gave the unit back and ended its hold")
}

func TestOnFullBucketMapRefuseAnswersAnError(t *testing.T) {
	f := newFixture(1)
	f.store.RefuseOnFullMap(true)
	fillMap(t, f, 1, 100, minute(600))
	b := admit(t, f.store, limit.Plan{Tokens: []limit.Op{tokens("api_key", "b", 100, minute(600))}})
	require.True(t, b.Admitted(), "a slot is free")
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{tokens("api_key", "c", 100, minute(600))}})
	require.ErrorIs(t, out.Err, limit.ErrBucketMapFull)
	require.Empty(t, out.Skipped)
}

func TestTheMapsFillIsReported(t *testing.T) {
	f := newFixture(3)
	var seen []string
	f.store.OnMapFill(func(family string, entries, ceiling int64) {
		seen = append(seen, family+" "+strconv.FormatInt(entries, 10)+"/"+strconv.FormatInt(ceiling, 10))
	})
	fillMap(t, f, 4, 1, minute(600), day(6000))
	require.Equal(t, []string{
		"token_budget 0/3", "token_budget_day 0/3", "token_budget 1/3", "token_budget_day 1/3",
		"token_budget 1/3", "token_budget_day 1/3", "token_budget 2/3", "token_budget_day 2/3",
		"token_budget 2/3", "token_budget_day 2/3", "token_budget 3/3", "token_budget_day 3/3",
		"token_budget 3/3", "token_budget_day 3/3",
	}, seen)
}

// Workers (one Store each, as worker VMs) place the same new identity
// past the ceiling at once, and many identities race for few slots: an
// identity is never in two slots, its budget is never exceeded, and no
// update is lost; once every hold has ended every slot has none open.
func TestWorkersPlacingBucketsPastTheCeilingShareOneBucketPerIdentity(t *testing.T) {
	const workers, attempts, amount = 8, 150, 7
	sd := localtest.New()
	c := &clock{t: 1_700_000_000 * sec} // frozen: refill adds nothing
	filler := local.New(sd, c.now, 4)
	for i := range 4 {
		var out limit.Outcome
		filler.Admit(limit.Plan{Tokens: []limit.Op{tokens("api_key", "junk"+strconv.Itoa(i), 1, minute(1000))}}, func(o limit.Outcome) { out = o })
		require.True(t, out.Admitted())
	}
	shared := tokens("api_key", "shared", amount, minute(1000))
	var admitted, errored atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			s := local.New(sd, c.now, 4)
			for i := range attempts {
				op := shared
				if i%2 == 1 {
					op = tokens("api_key", "w"+strconv.Itoa(w)+"-"+strconv.Itoa(i%6), amount, minute(1000))
				}
				var out limit.Outcome
				s.Admit(limit.Plan{Tokens: []limit.Op{op}}, func(o limit.Outcome) { out = o })
				switch {
				case out.Err != nil:
					errored.Add(1)
				case out.Admitted() && op.Key == shared.Key:
					admitted.Add(1)
					s.Settle(out.Hold, amount)
				case out.Admitted():
					s.Settle(out.Hold, 0) // whole again at once
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, errored.Load())
	n := admitted.Load()
	require.LessOrEqual(t, n*amount, int64(1000), "never more than the shared identity's capacity")
	owners := map[string]int{}
	var sharedLevel []float64
	for _, s := range slotsOf(t, sd, "tb|o|t|api_key|v1|", 1) {
		owners[s.owner]++
		require.Zero(t, s.opens, "every hold ended")
		if s.owner == shared.Key {
			sharedLevel = s.levels
		}
	}
	for owner, k := range owners {
		require.Equal(t, 1, k, "%s is in one slot", owner)
	}
	require.NotNil(t, sharedLevel, "the shared identity kept its slot: it was never whole")
	require.Equal(t, []float64{float64(1000 - n*amount)}, sharedLevel, "no lost update")
}

// FuzzReusableSlotsKeepEveryBudgetAndEndEveryHoldOnce drives a store with a
// tiny map through arbitrary admissions of a few identities, settlements,
// releases and clock moves: an identity is never in two slots, a level
// never passes its capacity, and once every hold has ended no slot counts
// one open. (FuzzGarbageInSharedDataNeverPanics writes garbage into slots.)
func FuzzReusableSlotsKeepEveryBudgetAndEndEveryHoldOnce(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 0, 3, 0, 4, 1, 0, 2, 0, 3, 60, 0, 5, 0, 6})
	f.Add([]byte{0, 9, 0, 9, 0, 9, 4, 1, 0, 8, 3, 200, 1, 1, 0, 7})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 1024 {
			steps = steps[:1024]
		}
		f := newFixture(2)
		var holds []limit.Hold
		const capacity = 500
		for i := 0; i+1 < len(steps); i += 2 {
			arg := steps[i+1]
			switch steps[i] % 5 {
			case 0, 4: // admit: a token bucket and, for some, a concurrency unit
				id := "id" + strconv.Itoa(int(arg%7))
				plan := limit.Plan{Tokens: []limit.Op{tokens("api_key", id, int64(arg%5)*60, minute(capacity))}}
				if arg%2 == 1 {
					plan.Requests = []limit.Op{inflight("api_key", id, 2)}
				}
				out := admit(t, f.store, plan)
				require.NoError(t, out.Err)
				if out.Admitted() {
					holds = append(holds, out.Hold)
				}
			case 1: // settle the oldest hold on some usage
				if len(holds) > 0 {
					f.store.Settle(holds[0], int64(arg)*3)
					holds = holds[1:]
				}
			case 2: // release the newest hold
				if len(holds) > 0 {
					f.store.Release(holds[len(holds)-1])
					holds = holds[:len(holds)-1]
				}
			case 3: // time passes
				f.clock.t += int64(arg) * sec
			}
			owners := map[string]bool{}
			for key, s := range slotsOf(t, f.sd, "tb|o|t|api_key|v1|", 1) {
				require.False(t, owners[s.owner], "%s is in two slots (%s)", s.owner, key)
				owners[s.owner] = true
				require.LessOrEqual(t, s.levels[0], float64(capacity))
			}
		}
		for _, h := range holds {
			f.store.Release(h)
		}
		for _, table := range []string{"tb|o|t|api_key|v1|", "tb|o|c|api_key|v1|"} {
			for key, s := range slotsOf(t, f.sd, table, 1) {
				require.Zero(t, s.opens, "%s: every hold ended once", key)
			}
		}
	})
}

// afterSet runs other once, just after the first write of a key with the
// given prefix.
type afterSet struct {
	*localtest.SharedData
	prefix string
	other  func()
	once   sync.Once
}

func (a *afterSet) Set(key string, value []byte, cas uint32) error {
	err := a.SharedData.Set(key, value, cas)
	if strings.HasPrefix(key, a.prefix) {
		a.once.Do(a.other)
	}
	return err
}

// A worker that claimed the map's last entry before this one saw it full
// may write the bucket under its own key while this one places it in a
// slot: the placement sees it, gives its take back, and admits at home, so
// the identity is not held in two buckets.
func TestAPlacementThatMeetsTheBucketAtHomeGivesWay(t *testing.T) {
	sd := localtest.New()
	c := &clock{t: 1_700_000_000 * sec}
	op := tokens("api_key", "k", 100, minute(600))
	require.NoError(t, sd.Set("tb|n|token_budget|tb|t|api_key|v1", []byte("1"), 0)) // the map is full
	racy := &afterSet{SharedData: sd, prefix: "tb|o|t|api_key|v1|0", other: func() {
		// The other worker's write of the bucket it claimed a slot for.
		require.NoError(t, sd.Set(op.Key, bucket.AppendEncoded(nil, []bucket.State{bucket.Fresh(op.Limits[0], c.t)}), 0))
	}}
	worker := local.New(racy, c.now, 1)
	out := admit(t, worker, limit.Plan{Tokens: []limit.Op{op}})
	require.True(t, out.Admitted())
	require.Empty(t, out.Skipped)
	require.Equal(t, op.Key, out.Hold.Entries[0].Key, "admitted at home")
	require.Equal(t, []float64{500}, levels(t, sd, op))
	s, _ := readSlot(t, sd, "tb|o|t|api_key|v1|0", 1)
	require.Equal(t, slot{levels: []float64{600}, opens: 0, owner: op.Key}, s, "the slot's take was given back: whole, free for another")
}
