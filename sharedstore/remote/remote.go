// Package remote is the filter's Store over the fleet-wide sharedstore
// service, reached with proxy_http_call. It never blocks: Admit answers from
// the call's response callback, and Settle and Release are fire and forget,
// retried from Tick for a bounded time (the service ends each hold once, so
// a retry never counts twice).
//
// The client names every hold before it asks for it. When an admission's
// answer is lost (timeout_ms passed, the connection failed, a 5xx whose
// Redis call may still have run), the filter treats the store as
// unavailable, yet Redis may have committed the reservation, or may commit
// it later. So the client releases that hold id like any other, with the
// same retries; the service gives the units back if the admission ran, and
// otherwise leaves a tombstone that makes the admission commit nothing.
//
// This package is compiled into the .wasm: no fmt, os, time or encoding/json
// (each links syscall, whose init Envoy traps), no goroutines; a test pins it.
package remote

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// Caller sends one HTTP request to the sharedstore cluster. The filter binds
// it to proxy_http_call on its root context (cluster and authority from the
// plugin config); cb runs later, from proxy_on_http_call_response, with
// err set when the call failed or timed out. A non-nil return means cb will
// never run.
type Caller interface {
	Call(headers [][2]string, body []byte, timeoutMs uint32, cb func(status int, body []byte, err error)) error
}

// Config is the part of the plugin's redis settings the client needs.
type Config struct {
	Token     string // bearer token; sent only in the authorization header
	Authority string // :authority of the calls
	TimeoutMs uint32 // per call; 0 means 50
	// RetryForNs bounds how long a failed settle or release is retried
	// before it is dropped (the bucket then recovers by refill); 0 means
	// DefaultRetryForNs.
	RetryForNs int64
	// Queue is the bound on waiting calls this store shares with the VM's
	// other stores (a retired config's store still delivering); nil means
	// a queue of its own.
	Queue *Queue
	// NewHoldID returns a fresh hold id of the form wire.ValidHoldID
	// accepts, unique across the fleet; nil means 128 bits from the
	// runtime's generator (seeded by the host's random_get).
	NewHoldID func() string
}

// DefaultRetryForNs is how long a settlement is retried by default: ten
// minutes, longer than a database failover or a sharedstore rollout, so a
// record is dropped only by an outage of the service itself past that.
const DefaultRetryForNs = 600_000_000_000

// MaxWaiting bounds the calls waiting for a retry in one VM: while the
// service is down every ending stream adds one (a few hundred bytes), and
// memory must not grow with the outage. Past it the oldest call is dropped
// and counted, one without an inference record first.
const MaxWaiting = 10_000

// Queue counts the calls waiting in the stores that share it; the zero
// value is ready to use. It is used from the VM's thread only.
type Queue struct{ waiting int }

// Waiting is how many calls wait in the queue's stores.
func (q *Queue) Waiting() int { return q.waiting }

// ErrTokenRejected is an admission sharedstore answered 401: the filter's
// token is not the one the service was started with. It is a configuration
// fault, not an outage, so the filter's log says which setting to fix.
var ErrTokenRejected = errs.New("sharedstore rejected the token (401)")

// Store is the remote sharedstore.Store. It is used from one VM thread only.
type Store struct {
	c        Caller
	cfg      Config
	now      func() int64
	hAdmit   [][2]string
	hSettle  [][2]string
	hRelease [][2]string
	hLevels  [][2]string
	pending  []*pendingCall
	// failing is true while the last answer of a call was a failure: a
	// tick then sends one retry (a probe) instead of every due one.
	failing bool
	dropped uint64
	// droppedRecords counts the dropped settlements that carried an
	// inference record: spend the fleet ledger never heard of.
	droppedRecords uint64
}

type pendingCall struct {
	headers  [][2]string
	body     []byte
	deadline int64
	sentAt   int64
	inflight bool
	done     bool
	record   bool  // a settlement with an inference record
	failures int   // attempts that failed
	nextAt   int64 // no attempt before this (backoff)
}

// Retries back off: the first few follow each other on every tick, which
// rides out a blip; after that the gap doubles from backoffBaseNs up to
// backoffMaxNs, so a long outage (a database the service cannot write
// settlements to answers 503 for minutes) costs a few calls per pending
// settlement rather than two a second.
const (
	backoffFree   = 3
	backoffBaseNs = 500_000_000
	backoffMaxNs  = 8_000_000_000
)

// retriesPerTick bounds the retries one tick sends while the service
// answers, so a queue of thousands flushed after an outage does not hit it
// (and the proxy's own limit on callouts in flight) at once.
const retriesPerTick = 256

func backoff(failures int) int64 {
	if failures <= backoffFree {
		return 0
	}
	shift := min(failures-backoffFree-1, 5)
	return min(int64(backoffBaseNs)<<shift, backoffMaxNs)
}

// lostAfterNs is how long past its callout timeout an attempt may stay
// unanswered before it is presumed lost and sent again. Envoy answers every
// callout by its timeout, but drops the answer when the root context that
// made the call is gone (a reload retired it); settle and release are
// idempotent per hold id, so a second send never counts twice.
const lostAfterNs = 1_000_000_000

var _ sharedstore.Store = (*Store)(nil)

// New builds the client; now is the host clock in Unix nanoseconds.
func New(c Caller, cfg Config, now func() int64) *Store {
	if cfg.TimeoutMs == 0 {
		cfg.TimeoutMs = 50
	}
	if cfg.RetryForNs <= 0 {
		cfg.RetryForNs = DefaultRetryForNs
	}
	if cfg.Queue == nil {
		cfg.Queue = &Queue{}
	}
	if cfg.NewHoldID == nil {
		cfg.NewHoldID = randomHoldID
	}
	h := func(path string) [][2]string {
		return [][2]string{{":method", "POST"}, {":path", path}, {":authority", cfg.Authority},
			{"content-type", "application/json"}, {"authorization", "Bearer " + cfg.Token}}
	}
	return &Store{c: c, cfg: cfg, now: now, hAdmit: h(wire.PathAdmit), hSettle: h(wire.PathSettle), hRelease: h(wire.PathRelease), hLevels: h(wire.PathLevels)}
}

// Levels reads the levels of plan's token buckets (POST /v1/levels),
// charging nothing, and answers from its callback: the levels in the order
// of the ops and their limits, or an error. It is the tick's read of the
// buckets no tenant owns, for their gauge; nothing retries it.
func (s *Store) Levels(plan limit.Plan, done func([]limit.OpLevel, error)) {
	answered := false
	err := s.c.Call(s.hLevels, wire.AppendAdmit(nil, plan), s.cfg.TimeoutMs, func(status int, body []byte, err error) {
		if answered {
			return
		}
		answered = true
		switch {
		case err != nil:
			done(nil, errs.Wrap("sharedstore levels", err))
			return
		case status < 200 || status > 299:
			done(nil, errs.New("sharedstore levels: status "+strconv.Itoa(status)))
			return
		}
		r, err := wire.DecodeAdmitResponse(body)
		if err != nil {
			done(nil, err)
			return
		}
		done(r.Outcome().Levels, nil)
	})
	if err != nil && !answered {
		answered = true
		done(nil, errs.Wrap("sharedstore levels call", err))
	}
}

// Admit sends the whole plan in one call, under a hold id chosen here, and
// answers from its callback. Anything but a well-formed 2xx answer is
// Outcome{Err}, so the fallback policy (local buckets or 503) decides, never
// a guess; and when that answer leaves open whether Redis took the hold,
// the hold is released (see the package doc).
func (s *Store) Admit(plan limit.Plan, done func(limit.Outcome)) {
	entries := plan.HoldEntries()
	id := ""
	if len(entries) > 0 || plan.Spend.Any() {
		// A spend part needs an id too: it names the inference record the
		// settlement sends, so a retried settlement counts once.
		id = s.cfg.NewHoldID()
	}
	answered := false
	err := s.c.Call(s.hAdmit, wire.AppendAdmitHold(nil, plan, id), s.cfg.TimeoutMs, func(status int, body []byte, err error) {
		if answered {
			return
		}
		answered = true
		o, unsure := outcome(entries, &plan, status, body, err)
		if unsure && id != "" {
			s.Release(limit.Hold{Backend: limit.BackendRemote, ID: id, Entries: entries, Overage: plan.Overage, Spend: plan.Spend})
		}
		done(o)
	})
	if err != nil && !answered {
		// The call never left: nothing can have been committed.
		answered = true
		done(limit.Outcome{Err: errs.Wrap("sharedstore admit call", err)})
	}
}

// outcome reads an admission's answer. unsure reports that the answer does
// not rule out a reservation standing in Redis under the request's hold id:
// a transport failure or timeout, a 5xx, 408 or 429, or a 2xx it cannot
// use. Any other 4xx (bad request, wrong token) committed nothing, nor did
// a refusal or an aborted admission.
//
// A plan with a spend part needs the answer's spend verdict: an answer
// without one (a service that does not check spend) or one that says the
// ledger failed is ErrSpendUnavailable, so nothing passes a spend limit
// unchecked; a spend refusal commits nothing, like any refusal.
func outcome(entries []limit.HoldEntry, plan *limit.Plan, status int, body []byte, err error) (o limit.Outcome, unsure bool) {
	if err != nil {
		return limit.Outcome{Err: errs.Wrap("sharedstore admit", err)}, true
	}
	if status == 401 {
		return limit.Outcome{Err: ErrTokenRejected}, false
	}
	if status < 200 || status > 299 {
		unsure = status < 400 || status > 499 || status == 408 || status == 429
		return limit.Outcome{Err: errs.New("sharedstore admit: status " + strconv.Itoa(status))}, unsure
	}
	r, err := wire.DecodeAdmitResponse(body)
	if err != nil {
		return limit.Outcome{Err: err}, true
	}
	if r.Aborted {
		return limit.Outcome{Err: errs.New("sharedstore admit: aborted, the hold id was already released")}, false
	}
	o = r.Outcome()
	if err := r.SpendOutcome(&o, &plan.Spend); err != nil {
		return limit.Outcome{Err: err}, true
	}
	if !o.Admitted() {
		if o.Refusal == nil && o.SpendRefusal == nil {
			return limit.Outcome{Err: errs.New("sharedstore admit: refusal without a reason")}, true
		}
		o.Hold = limit.Hold{}
		return o, false
	}
	if (len(entries) > 0 || plan.Spend.Any()) && !wire.ValidHoldID(r.Hold) {
		return limit.Outcome{Err: errs.New("sharedstore admit: admitted without a hold id")}, true
	}
	o.Hold = limit.Hold{Backend: limit.BackendRemote, ID: r.Hold, Entries: entries, Overage: plan.Overage, Spend: plan.Spend}
	return o, false
}

func entryKeys(h limit.Hold) []string {
	keys := make([]string, len(h.Entries))
	for i, e := range h.Entries {
		keys[i] = e.Key
	}
	return keys
}

// Settle ends the hold with the reported usage, and with its inference
// record when it has a spend part; a hold with nothing to end (no id)
// costs no call.
func (s *Store) Settle(h limit.Hold, actual int64) {
	if h.ID == "" {
		return
	}
	rec := wire.RecordOf(h)
	s.send(s.hSettle, wire.AppendSettleRecord(nil, h.ID, actual, entryKeys(h), rec), rec != nil)
}

// Record delivers the inference record of h, a hold this store never held
// (admitted on the replica's own counters while the service could not
// answer): a settlement under a fresh hold id, which ends no bucket on the
// service and stores the record once, queued and retried like any
// settlement.
func (s *Store) Record(h limit.Hold) {
	rec := wire.RecordOf(h)
	if rec == nil {
		return
	}
	s.send(s.hSettle, wire.AppendSettleRecord(nil, s.cfg.NewHoldID(), 0, nil, rec), true)
}

// Release ends the hold giving everything back.
func (s *Store) Release(h limit.Hold) {
	if h.ID == "" {
		return
	}
	if h.Spend.Reserve > 0 {
		s.send(s.hRelease, wire.AppendReleaseSpend(nil, h.ID, entryKeys(h), h.Spend.Policy.Team), false)
		return
	}
	s.send(s.hRelease, wire.AppendRelease(nil, h.ID, entryKeys(h)), false)
}

func (s *Store) send(headers [][2]string, body []byte, record bool) {
	p := &pendingCall{headers: headers, body: body, deadline: s.now() + s.cfg.RetryForNs, record: record}
	s.attempt(p)
	if p.done {
		return
	}
	q := s.cfg.Queue
	if q.waiting >= MaxWaiting {
		s.forgetDone()
	}
	if q.waiting >= MaxWaiting && !s.dropOldest() {
		s.drop(p) // the VM's other stores hold every waiting call
		return
	}
	s.pending = append(s.pending, p)
	q.waiting++
}

// dropOldest drops this store's oldest waiting call without an inference
// record, or else its oldest, to make room; false when it has none.
func (s *Store) dropOldest() bool {
	at := -1
	for i, p := range s.pending {
		if p.done {
			continue
		}
		if !p.record {
			at = i
			break
		}
		if at < 0 {
			at = i
		}
	}
	if at < 0 {
		return false
	}
	s.drop(s.pending[at])
	copy(s.pending[at:], s.pending[at+1:])
	s.pending[len(s.pending)-1] = nil
	s.pending = s.pending[:len(s.pending)-1]
	s.cfg.Queue.waiting--
	return true
}

// attempt sends p once. A 2xx ends it; so does a 4xx other than 408 and
// 429, which no retry can fix. Anything else leaves it for Tick.
func (s *Store) attempt(p *pendingCall) {
	p.inflight, p.sentAt = true, s.now()
	err := s.c.Call(p.headers, p.body, s.cfg.TimeoutMs, func(status int, _ []byte, err error) {
		p.inflight = false
		if err == nil && (status >= 200 && status <= 299 || status >= 400 && status <= 499 && status != 408 && status != 429) {
			p.done, s.failing = true, false
			return
		}
		s.failing = true
		p.failed(s.now())
	})
	if err != nil {
		p.inflight = false
		s.failing = true
		p.failed(s.now())
	}
}

func (p *pendingCall) failed(now int64) {
	p.failures++
	p.nextAt = now + backoff(p.failures)
}

func (s *Store) drop(p *pendingCall) {
	s.dropped++
	if p.record {
		s.droppedRecords++
	}
}

// forgetDone drops calls that already succeeded from the queue.
func (s *Store) forgetDone() {
	kept := s.pending[:0]
	for _, p := range s.pending {
		if !p.done {
			kept = append(kept, p)
		}
	}
	s.keep(kept)
}

// keep makes kept (a prefix of the queue's array) the queue.
func (s *Store) keep(kept []*pendingCall) {
	for i := len(kept); i < len(s.pending); i++ {
		s.pending[i] = nil
	}
	s.cfg.Queue.waiting -= len(s.pending) - len(kept)
	s.pending = kept
}

// Tick retries failed settle and release calls, oldest first, and drops
// those older than RetryForNs. Each call backs off on its own (see
// backoff); and while the last answer was a failure (the service down) a
// tick sends one due retry, a probe, rather than every due one, so a queue
// of thousands costs the proxy two callouts a second until the service is
// back, then up to retriesPerTick a tick. Call it from the root context's
// on_tick.
func (s *Store) Tick() {
	now := s.now()
	budget := retriesPerTick
	if s.failing {
		budget = 1
	}
	kept := s.pending[:0]
	for _, p := range s.pending {
		switch {
		case p.done:
		case now > p.deadline:
			s.drop(p)
		default:
			if p.inflight && now > p.sentAt+int64(s.cfg.TimeoutMs)*1_000_000+lostAfterNs {
				p.inflight = false
			}
			if !p.inflight && now >= p.nextAt && budget > 0 {
				budget--
				s.attempt(p)
			}
			if !p.done {
				kept = append(kept, p)
			}
		}
	}
	s.keep(kept)
}

// Pending is how many settle or release calls still wait for success.
func (s *Store) Pending() int {
	n := 0
	for _, p := range s.pending {
		if !p.done {
			n++
		}
	}
	return n
}

// Dropped counts settle or release calls given up (retry window over or
// queue full), for the filter's metrics.
func (s *Store) Dropped() uint64 { return s.dropped }

// DroppedRecords counts the dropped settlements that carried an inference
// record (a part of Dropped): calls whose spend the fleet ledger lost.
func (s *Store) DroppedRecords() uint64 { return s.droppedRecords }
