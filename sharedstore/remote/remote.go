// Package remote is the filter's Store over the fleet-wide sharedstore
// service, reached with proxy_http_call. It never blocks: Admit answers from
// the call's response callback, and Settle and Release are fire and forget,
// retried from Tick for a bounded time (the service ends each hold once, so
// a retry never counts twice).
//
// This package is compiled into the .wasm: no fmt, os, time or encoding/json
// (each links syscall, whose init Envoy traps), no goroutines; a test pins it.
package remote

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/errs"
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
	// before it is dropped (the bucket then recovers by refill); 0 means 30 s.
	RetryForNs int64
}

// maxPending bounds the retry queue: while the service is down every ending
// stream adds one entry, and memory must not grow with the outage.
const maxPending = 4096

// Store is the remote sharedstore.Store. It is used from one VM thread only.
type Store struct {
	c        Caller
	cfg      Config
	now      func() int64
	hAdmit   [][2]string
	hSettle  [][2]string
	hRelease [][2]string
	pending  []*pendingCall
	dropped  uint64
}

type pendingCall struct {
	headers  [][2]string
	body     []byte
	deadline int64
	inflight bool
	done     bool
}

var _ sharedstore.Store = (*Store)(nil)

// New builds the client; now is the host clock in Unix nanoseconds.
func New(c Caller, cfg Config, now func() int64) *Store {
	if cfg.TimeoutMs == 0 {
		cfg.TimeoutMs = 50
	}
	if cfg.RetryForNs <= 0 {
		cfg.RetryForNs = 30e9
	}
	h := func(path string) [][2]string {
		return [][2]string{{":method", "POST"}, {":path", path}, {":authority", cfg.Authority},
			{"content-type", "application/json"}, {"authorization", "Bearer " + cfg.Token}}
	}
	return &Store{c: c, cfg: cfg, now: now, hAdmit: h(wire.PathAdmit), hSettle: h(wire.PathSettle), hRelease: h(wire.PathRelease)}
}

// Admit sends the whole plan in one call and answers from its callback.
// Anything but a well-formed 2xx answer is Outcome{Err}, so the fallback
// policy (local buckets or 503) decides, never a guess.
func (s *Store) Admit(plan sharedstore.Plan, done func(sharedstore.Outcome)) {
	answered := false
	answer := func(o sharedstore.Outcome) {
		if !answered {
			answered = true
			done(o)
		}
	}
	err := s.c.Call(s.hAdmit, wire.AppendAdmit(nil, plan), s.cfg.TimeoutMs, func(status int, body []byte, err error) {
		answer(outcome(plan, status, body, err))
	})
	if err != nil {
		answer(sharedstore.Outcome{Err: errs.Wrap("sharedstore admit call", err)})
	}
}

func outcome(plan sharedstore.Plan, status int, body []byte, err error) sharedstore.Outcome {
	if err != nil {
		return sharedstore.Outcome{Err: errs.Wrap("sharedstore admit", err)}
	}
	if status < 200 || status > 299 {
		return sharedstore.Outcome{Err: errs.New("sharedstore admit: status " + strconv.Itoa(status))}
	}
	r, err := wire.DecodeAdmitResponse(body)
	if err != nil {
		return sharedstore.Outcome{Err: err}
	}
	o := r.Outcome()
	if !o.Admitted {
		if o.Refusal == nil {
			return sharedstore.Outcome{Err: errs.New("sharedstore admit: refusal without a reason")}
		}
		o.Hold = sharedstore.Hold{}
		return o
	}
	entries := holdEntries(plan)
	if len(entries) > 0 && !wire.ValidHoldID(r.Hold) {
		return sharedstore.Outcome{Err: errs.New("sharedstore admit: admitted without a hold id")}
	}
	o.Hold = sharedstore.Hold{Backend: sharedstore.BackendRemote, ID: r.Hold, Entries: entries}
	return o
}

// holdEntries mirrors the server: concurrency units and token reservations
// end with the hold; request-count units never come back.
func holdEntries(p sharedstore.Plan) []sharedstore.HoldEntry {
	var out []sharedstore.HoldEntry
	for _, group := range [2][]sharedstore.Op{p.Requests, p.Tokens} {
		for _, op := range group {
			if op.Kind == sharedstore.KindRequests {
				continue
			}
			out = append(out, sharedstore.HoldEntry{Key: op.Key, Kind: op.Kind, Dimension: op.Dimension, Limits: op.Limits, Amount: op.Amount})
		}
	}
	return out
}

func entryKeys(h sharedstore.Hold) []string {
	keys := make([]string, len(h.Entries))
	for i, e := range h.Entries {
		keys[i] = e.Key
	}
	return keys
}

// Settle ends the hold with the reported usage; a hold with nothing to end
// (no id) costs no call.
func (s *Store) Settle(h sharedstore.Hold, actual int64) {
	if h.ID == "" {
		return
	}
	s.send(s.hSettle, wire.AppendSettle(nil, h.ID, actual, entryKeys(h)))
}

// Release ends the hold giving everything back.
func (s *Store) Release(h sharedstore.Hold) {
	if h.ID == "" {
		return
	}
	s.send(s.hRelease, wire.AppendRelease(nil, h.ID, entryKeys(h)))
}

func (s *Store) send(headers [][2]string, body []byte) {
	p := &pendingCall{headers: headers, body: body, deadline: s.now() + s.cfg.RetryForNs}
	s.attempt(p)
	if p.done {
		return
	}
	if len(s.pending) >= maxPending {
		s.forgetDone()
	}
	if len(s.pending) >= maxPending {
		s.pending[0] = nil
		s.pending = s.pending[1:]
		s.dropped++
	}
	s.pending = append(s.pending, p)
}

// attempt sends p once. A 2xx ends it; so does a 4xx other than 408 and
// 429, which no retry can fix. Anything else leaves it for Tick.
func (s *Store) attempt(p *pendingCall) {
	p.inflight = true
	err := s.c.Call(p.headers, p.body, s.cfg.TimeoutMs, func(status int, _ []byte, err error) {
		p.inflight = false
		if err == nil && (status >= 200 && status <= 299 || status >= 400 && status <= 499 && status != 408 && status != 429) {
			p.done = true
		}
	})
	if err != nil {
		p.inflight = false
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
	for i := len(kept); i < len(s.pending); i++ {
		s.pending[i] = nil
	}
	s.pending = kept
}

// Tick retries failed settle and release calls and drops those older than
// RetryForNs. Call it from the root context's on_tick.
func (s *Store) Tick() {
	now := s.now()
	kept := s.pending[:0]
	for _, p := range s.pending {
		switch {
		case p.done:
		case now > p.deadline:
			s.dropped++
		default:
			if !p.inflight {
				s.attempt(p)
			}
			if !p.done {
				kept = append(kept, p)
			}
		}
	}
	for i := len(kept); i < len(s.pending); i++ {
		s.pending[i] = nil
	}
	s.pending = kept
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
