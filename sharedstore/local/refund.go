package local

import (
	"math"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/strcmp"
)

// Token refunds (a settlement under its reservation, a release) are written
// to shared data when the hold ends, so every worker sees them at once.
// With batching on (SetRefundBatching, the config's
// token_budget.refund_batching) they are pending in the VM instead: Envoy's
// shared data is one mutex for every worker, and a refund written on its
// own costs a get and a set per token bucket per request. The next
// admission of the same bucket by this VM folds the refund into its own
// compare-and-swap, and Flush (the root's tick) writes what is left, so
// other workers see a refund at most one tick late and this VM sees it at
// once. DECISIONS.md, "Refunds reach shared data at settlement, or batched
// with the next admission or the tick".

// maxPendingRefunds bounds the buckets with a pending refund. A worker
// settles on a handful of shared buckets (global, model, team) and one per
// caller (key, user, client): 1024 is the callers of a busy worker in one
// 500 ms tick, and about 300 KiB at most (an entry is its key and
// MaxLimits Limits). Past it a refund is written at once, as before, so the
// bound caps the saving, never correctness.
const maxPendingRefunds = 1024

// refund is one bucket's pending give-back. It keeps its own copy of the
// hold's Limits (a hold's slices are reused once it ends); the map keeps a
// copy of the key.
type refund struct {
	key    string // the map's own copy
	limits [bucket.MaxLimits]limit.Limit
	n      int
	lay    layout // where the limits' states are in the value at key
	amount int64
	// touched: a refund was added since the last Flush. An entry left
	// untouched for a whole tick is removed, so cold buckets leave the
	// table while a hot one keeps its entry and allocates nothing.
	touched bool
}

func (r *refund) Limits() []limit.Limit { return r.limits[:r.n] }

// sameLimits reports that limits, placed by lay, are the ones r was
// recorded with.
func (r *refund) sameLimits(limits []limit.Limit, lay layout) bool {
	if len(limits) != r.n || lay != r.lay {
		return false
	}
	for i := range limits { // by index: in the VM a Limit copied out is a memory.copy
		if limits[i] != r.limits[i] {
			return false
		}
	}
	return true
}

// pendingRefund is key's pending refund entry, nil when it has none. The
// entry may hold a zero amount.
func (s *Store) pendingRefund(key string) *refund {
	if len(s.refunds) == 0 {
		return nil
	}
	for _, r := range &s.recent {
		if r != nil && sameKey(r.key, key) {
			return r
		}
	}
	r := s.refunds[key]
	if r != nil {
		s.remember(r)
	}
	return r
}

// recentRefunds is how many entries the store finds without the map: in
// the VM a map lookup of a bucket key costs about 1.9 k instructions, and a
// worker's requests settle and admit on the same few buckets (six
// dimensions with request counts are twelve) again and again.
const recentRefunds = 16

// remember puts r in the recent entries, in place of the oldest.
func (s *Store) remember(r *refund) {
	s.recent[s.recentNext%recentRefunds] = r
	s.recentNext++
}

// forgetRecent empties the recent entries, as an entry leaves the map.
func (s *Store) forgetRecent() { s.recent = [recentRefunds]*refund{} }

// sameKey is a == b, deciding most unequal bucket keys on their length and
// last byte: keys of one dimension differ in the identity that ends them.
// Equal keys are compared eight bytes at a time (strcmp): == in the VM goes
// a byte at a time, and a token bucket's key is about 80 bytes.
func sameKey(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || a[len(a)-1] == b[len(b)-1]) && strcmp.Equal(a, b)
}

// fold gives r's pending amount back to states (decoded, not yet written):
// the write that follows carries the refund, so it costs no call of its own.
// The caller zeroes r.amount once that write succeeded.
func fold(r *refund, states []bucket.State, now int64) {
	if r != nil && r.amount > 0 {
		bucket.Give(states, r.Limits(), r.amount, now)
	}
}

// refund gives amount back to key's bucket: pending when the table has room
// (or already holds key) and the store is not closed, else at once.
func (s *Store) refund(key string, limits []limit.Limit, lay layout, amount int64, now *int64) {
	if amount <= 0 && !isSpillKey(key) {
		return // an exact usage only refills, which is lazy: nothing to write
	}
	n := len(limits)
	if n == 0 || n > bucket.MaxLimits {
		return // as change: nothing was charged on such an op
	}
	if s.closed || !s.batch || isSpillKey(key) {
		// A reusable slot's refund ends its hold in the same write
		// (spill.go): summed with another it would end two in one.
		s.change(key, limits, lay, changeGive, amount, 0, 0, s.clock(now), nil)
		return
	}
	r := s.pendingRefund(key)
	if r != nil && !r.sameLimits(limits, lay) {
		// Another hold's parameters on the same key (a fallback plan sized
		// differently): a sum on one set of Limits would cap it wrongly, so
		// what was pending is written first and the entry takes these.
		if r.amount > 0 {
			s.change(key, r.Limits(), r.lay, changeGive, r.amount, 0, 0, s.clock(now), nil)
			r.amount = 0
		}
		r.n, r.lay = copy(r.limits[:], limits), lay
	}
	if r == nil {
		if len(s.refunds) >= maxPendingRefunds {
			s.change(key, limits, lay, changeGive, amount, 0, 0, s.clock(now), nil)
			return
		}
		if s.refunds == nil {
			s.refunds = make(map[string]*refund, 16)
		}
		if k := len(s.spareRefunds); k > 0 {
			r, s.spareRefunds[k-1] = s.spareRefunds[k-1], nil
			s.spareRefunds = s.spareRefunds[:k-1]
			*r = refund{}
		} else {
			r = &refund{}
		}
		r.n, r.lay = copy(r.limits[:], limits), lay
		// The key is copied: a hold's key may view memory the request reuses.
		r.key = strings.Clone(key)
		s.refunds[r.key] = r
		s.remember(r)
	}
	// Saturating: past a bucket's capacity more changes nothing.
	r.amount += min(amount, math.MaxInt64-r.amount)
	r.touched = true
}

// Flush writes every pending refund to shared data, each in its own
// compare-and-swap loop as a give-back was written before refunds waited.
// Entries stay, their amounts zeroed, so a hot bucket allocates nothing;
// an entry that had no refund for a whole tick leaves the table. The root
// calls it on every tick, so another worker sees a refund at most one tick
// late. Contention past endAttempts drops a refund, as it dropped one
// written at once.
func (s *Store) Flush() {
	if len(s.refunds) == 0 {
		return
	}
	var now int64 // read when the first refund is written
	for key, r := range s.refunds {
		if r.amount > 0 {
			s.change(key, r.Limits(), r.lay, changeGive, r.amount, 0, 0, s.clock(&now), nil)
			r.amount = 0
		} else if !r.touched {
			delete(s.refunds, key)
			s.forgetRecent()
			if len(s.spareRefunds) < maxSpareRefunds {
				s.spareRefunds = append(s.spareRefunds, r)
			}
			continue
		}
		r.touched = false
	}
}

// maxSpareRefunds bounds the removed entries kept for reuse.
const maxSpareRefunds = 64

// SetRefundBatching makes later refunds wait in the VM (on) or be written
// when their hold ends (off, the default). Turning it off flushes what was
// pending.
func (s *Store) SetRefundBatching(on bool) {
	if !on {
		s.Flush()
	}
	s.batch = on
}

// Close flushes and makes every later refund immediate: no tick follows
// (the plugin is done, or a reload retired this store while its streams
// may still settle here).
func (s *Store) Close() {
	s.Flush()
	s.closed = true
}

// PendingRefunds is the number of buckets with a refund not yet in shared
// data, for tests.
func (s *Store) PendingRefunds() int {
	n := 0
	for _, r := range s.refunds {
		if r.amount > 0 {
			n++
		}
	}
	return n
}
