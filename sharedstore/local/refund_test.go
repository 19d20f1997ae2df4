package local_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

// counting is shared data that counts the store's calls, and can lose a
// key (a bucket missing when a refund reaches it).
type counting struct {
	*localtest.SharedData
	gets, sets int
	lost       map[string]bool
}

func (c *counting) Get(key string) ([]byte, uint32, error) {
	c.gets++
	if c.lost[key] {
		return nil, 0, local.ErrNotFound
	}
	return c.SharedData.Get(key)
}

func (c *counting) Set(key string, value []byte, cas uint32) error {
	c.sets++
	if c.lost[key] {
		delete(c.lost, key) // a missing key's cas is never checked
		cas = 0
	}
	return c.SharedData.Set(key, value, cas)
}

func (c *counting) calls() int { return c.gets + c.sets }

// lose makes key read as missing until it is written again.
func (c *counting) lose(key string) {
	if c.lost == nil {
		c.lost = map[string]bool{}
	}
	c.lost[key] = true
}

type countingFixture struct {
	sd    *counting
	clock *clock
	store *local.Store
}

func newCountingFixture() *countingFixture {
	f := &countingFixture{sd: &counting{SharedData: localtest.New()}, clock: &clock{t: 1_700_000_000 * sec}}
	f.store = local.New(f.sd, f.clock.now, 0)
	f.store.SetRefundBatching(true) // the tests of the batching: refunds wait
	return f
}

// callsOf is the shared-data calls fn makes.
func (f *countingFixture) callsOf(fn func()) int {
	before := f.sd.calls()
	fn()
	return f.sd.calls() - before
}

func TestASettlementUnderItsReservationWritesNothing(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(s *local.Store, h limit.Hold)
	}{
		{"a refund", func(s *local.Store, h limit.Hold) { s.Settle(h, 120) }},
		{"the exact usage", func(s *local.Store, h limit.Hold) { s.Settle(h, 300) }},
		{"a release", func(s *local.Store, h limit.Hold) { s.Release(h) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newCountingFixture()
			key := tokens("api_key", "h1", 300, minute(600), day(2000))
			out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
			require.True(t, out.Admitted())
			require.Zero(t, f.callsOf(func() { c.end(f.store, out.Hold) }), "the refund waits in the VM")
			require.Equal(t, []float64{300, 1700}, levels(t, f.sd.SharedData, key), "shared data is untouched until the tick")
		})
	}
}

func TestARefundIsFoldedIntoTheBucketsNextAdmission(t *testing.T) {
	f := newCountingFixture()
	key := tokens("api_key", "h1", 300, minute(600), day(2000))
	plan := limit.Plan{Tokens: []limit.Op{key}}
	first := admit(t, f.store, plan)
	require.True(t, first.Admitted())
	f.store.Settle(first.Hold, 120) // refund 180, pending
	require.Equal(t, 1, f.store.PendingRefunds())

	var second limit.Outcome
	calls := f.callsOf(func() { second = admit(t, f.store, plan) })
	require.Equal(t, 2, calls, "one get and one set, as an admission with nothing pending")
	require.True(t, second.Admitted())
	require.Equal(t, []float64{180, 1580}, levels(t, f.sd.SharedData, key), "600-300+180-300: the refund rode on the admission's write")
	require.Equal(t, int64(180), second.Levels[0].Level.Remaining, "the caller is told the level with its refund in")
	require.Zero(t, f.store.PendingRefunds(), "written with the admission")
	require.Zero(t, f.callsOf(f.store.Flush), "nothing is left for the tick")
}

func TestARefundReachesSharedDataOnFlush(t *testing.T) {
	f := newCountingFixture()
	global := tokens("global", "", 300, minute(1000), day(5000))
	key := tokens("api_key", "h1", 300, minute(600))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{global, key}})
	require.True(t, out.Admitted())
	f.store.Settle(out.Hold, 100)

	require.Equal(t, 4, f.callsOf(f.store.Flush), "one get and one set per bucket")
	require.Equal(t, []float64{900, 4900}, levels(t, f.sd.SharedData, global))
	require.Equal(t, []float64{500}, levels(t, f.sd.SharedData, key))
	require.Zero(t, f.store.PendingRefunds())
	require.Zero(t, f.callsOf(f.store.Flush), "a flush with nothing pending makes no call")
}

func TestAnOverageIsChargedAtOnce(t *testing.T) {
	// Each case leaves 100 in shared data and a refund of 100 pending, then
	// settles a hold of 400 over its reservation. The overage sees 200 (the
	// refund folded in), as it would have had the refund been written at
	// once.
	cases := []struct {
		name    string
		overage limit.Overage
		actual  int64
		after   []float64
	}{
		{"debt", limit.OverageDebt, 550, []float64{50}},
		{"debt past the level", limit.OverageDebt, 650, []float64{-50}},
		{"skip, covered only with the pending refund", limit.OverageSkip, 550, []float64{50}},
		{"skip, not covered even with it: the refund alone is written", limit.OverageSkip, 650, []float64{200}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newCountingFixture()
			small := tokens("api_key", "h1", 400, minute(600))
			first := admit(t, f.store, limit.Plan{Tokens: []limit.Op{small}, Overage: c.overage})
			require.True(t, first.Admitted())
			f.store.Release(first.Hold) // 400 pending; shared data 200
			big := tokens("api_key", "h1", 100, minute(600))
			second := admit(t, f.store, limit.Plan{Tokens: []limit.Op{big}, Overage: c.overage})
			require.True(t, second.Admitted()) // 200+400-100 = 500 shared
			third := admit(t, f.store, limit.Plan{Tokens: []limit.Op{small}, Overage: c.overage})
			require.True(t, third.Admitted()) // 100 shared
			f.store.Release(second.Hold)      // 100 pending
			require.Equal(t, []float64{100}, levels(t, f.sd.SharedData, small))

			require.Equal(t, 2, f.callsOf(func() { f.store.Settle(third.Hold, c.actual) }), "the overage is written at once")
			require.Equal(t, c.after, levels(t, f.sd.SharedData, small))
			require.Zero(t, f.store.PendingRefunds(), "the pending refund rode on the overage's write")
		})
	}
}

func TestARefusedAdmissionKeepsTheRefundPending(t *testing.T) {
	f := newCountingFixture()
	key := tokens("api_key", "h1", 500, minute(600)) // refills 10 a second
	first := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
	require.True(t, first.Admitted())
	f.store.Settle(first.Hold, 300) // 100 shared, 200 pending

	big := tokens("api_key", "h1", 350, minute(600))
	var out limit.Outcome
	require.Equal(t, 1, f.callsOf(func() { out = admit(t, f.store, limit.Plan{Tokens: []limit.Op{big}}) }),
		"a refusal reads and writes nothing")
	require.False(t, out.Admitted())
	require.Equal(t, int64(300), out.Refusal.Level.Remaining, "the refusal counts the caller's own refund")
	require.Equal(t, int64(5), out.Refusal.RetryAfterSec, "(350-300)/10, not (350-100)/10")
	require.Equal(t, []float64{100}, levels(t, f.sd.SharedData, key))
	require.Equal(t, 1, f.store.PendingRefunds(), "still pending")

	f.store.Flush()
	require.Equal(t, []float64{300}, levels(t, f.sd.SharedData, key))
}

func TestARefundOnAMissingBucketIsDropped(t *testing.T) {
	for _, c := range []struct {
		name string
		next func(t *testing.T, f *countingFixture, op limit.Op)
	}{
		{"at its next admission", func(t *testing.T, f *countingFixture, op limit.Op) {
			require.True(t, admit(t, f.store, limit.Plan{Tokens: []limit.Op{op}}).Admitted())
			require.Equal(t, []float64{300}, levels(t, f.sd.SharedData, op), "a fresh bucket, the refund not added")
		}},
		{"on flush", func(t *testing.T, f *countingFixture, op limit.Op) {
			f.store.Flush()
			require.True(t, f.sd.lost[op.Key], "a refund never creates a missing bucket")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newCountingFixture()
			op := tokens("api_key", "h1", 300, minute(600))
			out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{op}})
			require.True(t, out.Admitted())
			f.store.Settle(out.Hold, 0)
			f.sd.lose(op.Key)
			c.next(t, f, op)
			require.Zero(t, f.store.PendingRefunds())
			require.Zero(t, f.callsOf(f.store.Flush))
		})
	}
}

func TestTheBoundWritesRefundsAtOnceWhenFull(t *testing.T) {
	f := newCountingFixture()
	settle := func(id string) limit.Op {
		op := tokens("user", id, 10, minute(600))
		out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{op}})
		require.True(t, out.Admitted())
		f.store.Settle(out.Hold, 0)
		return op
	}
	for i := 0; i < local.MaxPendingRefunds; i++ {
		settle("u" + strconv.Itoa(i))
	}
	require.Equal(t, local.MaxPendingRefunds, f.store.PendingRefunds())

	over := tokens("user", "over", 10, minute(600))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{over}})
	require.Equal(t, 2, f.callsOf(func() { f.store.Settle(out.Hold, 0) }), "past the bound a refund is written at once")
	require.Equal(t, []float64{600}, levels(t, f.sd.SharedData, over))
	require.Equal(t, local.MaxPendingRefunds, f.store.PendingRefunds())

	// A bucket that has an entry still waits when the table is full.
	again := admit(t, f.store, limit.Plan{Tokens: []limit.Op{tokens("user", "u0", 10, minute(600))}})
	require.True(t, again.Admitted())
	require.Zero(t, f.callsOf(func() { f.store.Settle(again.Hold, 0) }))

	// An entry left without a refund for a whole tick leaves the table:
	// the first flush writes every refund, the second removes the entries.
	f.store.Flush()
	f.store.Flush()
	later := admit(t, f.store, limit.Plan{Tokens: []limit.Op{over}})
	require.Zero(t, f.callsOf(func() { f.store.Settle(later.Hold, 0) }), "there is room again")
	require.Equal(t, 1, f.store.PendingRefunds())
}

func TestAClosedStoreWritesRefundsAtOnce(t *testing.T) {
	f := newCountingFixture()
	key := tokens("api_key", "h1", 300, minute(600))
	out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{key}})
	require.True(t, out.Admitted())
	f.store.Settle(out.Hold, 100)
	later := admit(t, f.store, limit.Plan{Tokens: []limit.Op{tokens("api_key", "h2", 300, minute(600))}})
	require.True(t, later.Admitted())

	require.Equal(t, 2, f.callsOf(f.store.Close), "closing writes what was pending")
	require.Equal(t, []float64{500}, levels(t, f.sd.SharedData, key))
	require.Equal(t, 2, f.callsOf(func() { f.store.Release(later.Hold) }), "no tick follows a closed store: at once")
	require.Zero(t, f.store.PendingRefunds())
}

// reusing is shared data that allocates nothing once a key exists: it
// hands out its own buffers, as the SharedData contract allows.
type reusing struct {
	m    map[string]*reused
	next uint32
}

type reused struct {
	value []byte
	cas   uint32
}

func (r *reusing) Get(key string) ([]byte, uint32, error) {
	if e := r.m[key]; e != nil {
		return e.value, e.cas, nil
	}
	return nil, 0, local.ErrNotFound
}

func (r *reusing) Set(key string, value []byte, cas uint32) error {
	e := r.m[key]
	if e != nil && cas != 0 && cas != e.cas {
		return local.ErrCasMismatch
	}
	if e == nil {
		e = &reused{}
		r.m[key] = e
	}
	r.next++
	e.value, e.cas = append(e.value[:0], value...), r.next
	return nil
}

// TestPendingRefundsAllocateNothingOnceWarm: a bucket settled and admitted
// again every request, with ticks between, reuses its entry.
func TestPendingRefundsAllocateNothingOnceWarm(t *testing.T) {
	c := &clock{t: 1_700_000_000 * sec}
	store := local.New(&reusing{m: map[string]*reused{}}, c.now, 0)
	store.SetRefundBatching(true)
	plan := limit.Plan{Tokens: []limit.Op{
		tokens("global", "", 100, minute(1<<40), day(1<<40)), tokens("api_key", "h1", 100, minute(1<<40), day(1<<40)),
	}}
	var spare local.Spare
	var hold limit.Hold
	done := func(o limit.Outcome) { hold = o.Hold }
	tick := func() { // five requests, then the tick
		for i := range 5 {
			c.t += sec / 10
			store.AdmitWith(plan, &spare, done)
			if i%2 == 0 {
				store.Settle(hold, 80)
			} else {
				store.Release(hold)
			}
		}
		store.Flush()
	}
	for range 5 {
		tick()
	}
	require.Zero(t, testing.AllocsPerRun(100, tick))
}

// refundOps replays a sequence of admissions, settlements, releases, clock
// moves and flushes, read from b, on a store whose refunds wait and on one
// that writes them at once (closed, as every refund was written before
// they waited). Every answer must be the same, and after a final flush so
// must every level: a pending refund only changes when shared data learns
// of it. Capacities refill whole units a second, so no float rounding
// separates the two.
func refundOps(t *testing.T, b []byte) {
	c := &clock{t: 1_700_000_000 * sec}
	immediate, pending := localtest.New(), localtest.New()
	now := local.New(immediate, c.now, 0) // the default: refunds written at once
	later := local.New(pending, c.now, 0)
	later.SetRefundBatching(true)
	type pair struct {
		now, later limit.Hold
		amount     int64
	}
	var holds []pair
	var keys []limit.Op
	planFor := func(id byte, amount int64, overage limit.Overage) limit.Plan {
		p := limit.Plan{Overage: overage, Tokens: []limit.Op{
			tokens("global", "", amount, minute(1200), day(86400)),
			tokens("api_key", "k"+strconv.Itoa(int(id%3)), amount, minute(600), day(2*86400)),
		}}
		if id%2 == 0 {
			p.Requests = []limit.Op{inflight("api_key", "k"+strconv.Itoa(int(id%3)), 2)}
		}
		return p
	}
	for i := 0; i+1 < len(b); i += 2 {
		op, arg := b[i], b[i+1]
		switch op % 5 {
		case 0, 1: // admit
			plan := planFor(arg, int64(arg)*3, limit.Overage(op/5%2))
			keys = append(keys, plan.Tokens...)
			a, p := admit(t, now, plan), admit(t, later, plan)
			require.Equal(t, a.Admitted(), p.Admitted(), "step %d", i)
			require.Equal(t, a.Refusal, p.Refusal, "step %d: a refusal is told as if the refund were written", i)
			require.Equal(t, a.Levels, p.Levels, "step %d", i)
			if a.Admitted() {
				holds = append(holds, pair{a.Hold, p.Hold, int64(arg) * 3})
			}
		case 2: // settle, under or over the reservation
			if len(holds) == 0 {
				continue
			}
			j := int(arg) % len(holds)
			h := holds[j]
			holds = append(holds[:j], holds[j+1:]...)
			actual := h.amount*int64(arg%4)/2 + int64(arg%7)
			now.Settle(h.now, actual)
			later.Settle(h.later, actual)
		case 3: // release
			if len(holds) == 0 {
				continue
			}
			j := int(arg) % len(holds)
			h := holds[j]
			holds = append(holds[:j], holds[j+1:]...)
			now.Release(h.now)
			later.Release(h.later)
		case 4:
			if arg%2 == 0 {
				later.Flush()
			} else {
				c.t += int64(arg%16) * sec
			}
		}
	}
	later.Flush()
	for _, op := range keys {
		require.Equal(t, levelsAt(t, immediate, op, c.t), levelsAt(t, pending, op, c.t), "%s after flush", op.Key)
	}
}

// levelsAt is op's bucket levels as a read at now finds them (refilled):
// a refund written later has refilled the stored level later too.
func levelsAt(t testing.TB, sd *localtest.SharedData, op limit.Op, now int64) []float64 {
	t.Helper()
	states := storedStates(t, sd, op)
	if states == nil {
		return nil
	}
	out := make([]float64, len(states))
	for i := range states {
		states[i].Refill(op.Limits[i], now)
		out[i] = states[i].Level
	}
	return out
}

func TestLevelsAfterFlushEqualImmediateSettlement(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run("seed "+strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			b := make([]byte, 400)
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			refundOps(t, b)
		})
	}
}

// An entry that leaves the table (idle for a tick) must not be found again
// through the store's recent entries: a refund added to it would never be
// flushed, and the caller would lose those tokens.
func TestARefundAfterItsEntryLeftTheTableIsStillWritten(t *testing.T) {
	f := newCountingFixture()
	idle := tokens("api_key", "h1", 300, minute(600))
	busy := tokens("api_key", "h2", 300, minute(600))
	settle := func(op limit.Op) {
		out := admit(t, f.store, limit.Plan{Tokens: []limit.Op{op}})
		require.True(t, out.Admitted())
		f.store.Settle(out.Hold, 100) // a refund of 200, pending
	}
	settle(idle)
	settle(busy)
	f.store.Flush() // both written
	settle(busy)    // the busy bucket keeps its entry
	f.store.Flush() // the idle one leaves the table

	settle(idle)
	require.Equal(t, 1, f.store.PendingRefunds(), "the idle bucket's new refund waits in the table")
	f.store.Flush()
	require.Equal(t, []float64{400}, levels(t, f.sd.SharedData, idle), "600-300+200-300+200")
}

// The store's clock is a host call in the VM: ending a hold whose refunds
// all wait reads it not at all, and one that writes reads it once.
func TestEndingAHoldReadsTheClockOnlyForAWrite(t *testing.T) {
	for _, c := range []struct {
		name  string
		end   func(s *local.Store, h limit.Hold)
		reads int
	}{
		{"refunds that wait", func(s *local.Store, h limit.Hold) { s.Settle(h, 100) }, 0},
		{"a release that waits", func(s *local.Store, h limit.Hold) { s.Release(h) }, 0},
		{"an overage on both buckets", func(s *local.Store, h limit.Hold) { s.Settle(h, 400) }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{t: 1_700_000_000 * sec}
			reads := 0
			store := local.New(localtest.New(), func() int64 { reads++; return clk.now() }, 0)
			store.SetRefundBatching(true)
			plan := limit.Plan{Tokens: []limit.Op{
				tokens("global", "", 300, minute(1000)), tokens("api_key", "h1", 300, minute(600)),
			}}
			out := admit(t, store, plan)
			require.True(t, out.Admitted())
			reads = 0
			c.end(store, out.Hold)
			require.Equal(t, c.reads, reads)
		})
	}
}

// By default a refund is in shared data when its hold ends: another
// worker's store, sharing the data, admits on the refunded level with no
// flush between. With batching it waits, and the other worker sees the
// bucket without it until the flush.
func TestARefundIsSeenByEveryWorkerAtOnceUnlessBatched(t *testing.T) {
	for _, c := range []struct {
		name   string
		batch  bool
		before []float64 // the level another worker reads before any flush
	}{
		{"default: at settlement", false, []float64{590}},
		{"refund_batching: on the tick", true, []float64{300}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sd := &counting{SharedData: localtest.New()}
			clk := &clock{t: 1_700_000_000 * sec}
			worker1, worker2 := local.New(sd, clk.now, 0), local.New(sd, clk.now, 0)
			worker1.SetRefundBatching(c.batch)
			worker2.SetRefundBatching(c.batch)
			key := tokens("api_key", "h1", 300, minute(600))
			out := admit(t, worker1, limit.Plan{Tokens: []limit.Op{key}})
			require.True(t, out.Admitted())
			calls := sd.calls()
			worker1.Settle(out.Hold, 10)
			if c.batch {
				require.Equal(t, calls, sd.calls(), "a batched refund waits in the VM")
			} else {
				require.Equal(t, calls+2, sd.calls(), "one get and one set at settlement")
			}
			require.Equal(t, c.before, levels(t, sd.SharedData, key))
			worker1.Flush()
			require.Equal(t, []float64{590}, levels(t, sd.SharedData, key), "after the tick both agree")
			again := admit(t, worker2, limit.Plan{Tokens: []limit.Op{key}})
			require.True(t, again.Admitted())
			require.Equal(t, []float64{290}, levels(t, sd.SharedData, key))
		})
	}
}
