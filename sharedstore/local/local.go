// Package local is the shared-data backend of sharedstore.Store: every
// worker VM of one Envoy keeps its buckets in proxy shared data and changes
// them with compare-and-swap, so all workers enforce one budget per Envoy.
// It answers synchronously: Admit calls done before it returns.
//
// Compiled into the .wasm: no fmt, no os, no goroutines, never panics.
package local

import (
	"github.com/tokenbudget/tokenbudget/shared/bucket"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// SharedData is proxy shared data as the filter sees it (one map for every
// worker of the vm_id). The filter adapts the host's status codes to
// ErrNotFound and ErrCasMismatch; any other error is a store failure.
type SharedData interface {
	// Get returns the value and its cas, or ErrNotFound. The store reads
	// the value before its next Get or Set and never keeps it, so an
	// implementation may return memory it reuses.
	Get(key string) (value []byte, cas uint32, err error)
	// Set stores value when cas is 0, the key is missing, or cas matches the
	// key's current cas; otherwise it returns ErrCasMismatch.
	Set(key string, value []byte, cas uint32) error
}

// Errors a SharedData answers with, and the one this store adds when the
// compare-and-swap loop cannot win.
var (
	ErrNotFound    = errs.New("shared data: key not found")
	ErrCasMismatch = errs.New("shared data: cas mismatch")
	ErrContention  = errs.New("shared data: compare-and-swap retries exhausted")
)

const (
	// admitAttempts bounds one op's CAS loop at admission; past it the store
	// answers with an error rather than spin on a hot key.
	admitAttempts = 64
	// endAttempts bounds a give-back (settle, release, undo). It is larger
	// because a lost give-back leaks budget, and a concurrency unit forever.
	endAttempts = 1024
	// sentinelKey holds no budget; its cas is one no bucket key can carry,
	// which turns Set into "create only if absent" (see foreignCas).
	sentinelKey = "tb|cas"
)

// Store is one worker VM's view of the shared-data buckets. It keeps scratch
// buffers, so one Store serves one VM (one thread); the VMs share the
// SharedData, never a Store.
type Store struct {
	sd         SharedData
	now        func() int64
	maxBuckets int
	// refuseFull: a bucket no slot can take is an ErrBucketMapFull
	// admission error rather than a dimension that fails open (spill.go).
	refuseFull bool
	// onFill, when set, hears a map's entries each time this store counts
	// them (creating a bucket): the filter's fill gauge.
	onFill func(family string, entries, ceiling int64)

	states      [bucket.MaxLimits]bucket.State
	buf         []byte
	taken       []taken
	pairs       []pairState // per token op of the admission under way (record.go)
	deferred    []bucket.State
	sentinelCas uint32
	// slotTakes are the entries of taken in reusable slots (spill.go).
	slotTakes []slotTake
	// privateLimits sizes the levels of the admission under way.
	privateLimits int
	// spare is what the admission under way was lent (AdmitWith).
	spare *Spare
	// spendKeys caches built spend counter keys (see counterKey).
	spendKeys map[spendKeyRef]string

	// refunds are the token refunds not yet in shared data, by bucket key
	// (refund.go); spareRefunds are removed entries kept for reuse.
	refunds      map[string]*refund
	spareRefunds []*refund
	// recent are entries of refunds found again without the map.
	recent     [recentRefunds]*refund
	recentNext uint8
	// closed: no tick will flush this store, so refunds are written at once.
	closed bool
	// batch: refunds wait for the bucket's next admission or the tick
	// (refund.go); false writes each when its hold ends.
	batch bool
}

// taken is an op this admission charged, kept so a later refusal can give
// it back and so the hold can be built.
type taken struct {
	op       *limit.Op
	levelsAt int    // index of its first OpLevel in the outcome, -1 when not private
	lay      layout // where its states are in its value (a record's, see takenKey)
}

// slotTake is an entry of s.taken (at) taken in a reusable slot (key),
// kept beside s.taken rather than in it: in the VM every byte a taken
// grows by is copied on every admission, and slots are for the rare
// bucket past max_buckets.
type slotTake struct {
	at  int
	key string
}

var _ sharedstore.Store = (*Store)(nil)

// New returns a Store over sd. now is the clock in Unix nanoseconds;
// maxBuckets caps the distinct buckets of each map (0 or less: no cap).
func New(sd SharedData, now func() int64, maxBuckets int) *Store {
	return &Store{sd: sd, now: now, maxBuckets: maxBuckets, buf: make([]byte, 0, bucket.EncodedLen(bucket.MaxLimits))}
}

// RefuseOnFullMap makes a bucket that neither its map nor a reusable slot
// can take an admission error (ErrBucketMapFull) instead of a dimension
// that fails open: rate_limiting.on_full_bucket_map "refuse".
func (s *Store) RefuseOnFullMap(refuse bool) { s.refuseFull = refuse }

// OnMapFill sets the function that hears a map's entries and ceiling each
// time the store counts them (when it makes a bucket): family is the map's
// name as rate_limit_skipped_total labels it ("token_budget",
// "token_budget_day", "requests").
func (s *Store) OnMapFill(f func(family string, entries, ceiling int64)) { s.onFill = f }
