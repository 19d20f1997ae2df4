package server

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// Config is what the HTTP service needs.
type Config struct {
	Buckets *Buckets
	// Token is the shared secret every /v1 call must present as
	// "Authorization: Bearer <token>". It is compared in constant time and
	// never logged.
	Token string
	// Registry receives the service's metrics and is served on /metrics;
	// nil means a fresh registry.
	Registry *prometheus.Registry
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// RedisTimeout bounds each request's Redis work (default 2s), so a
	// stuck Redis answers 503 rather than holding filter callouts open.
	RedisTimeout time.Duration
	// Ledger, when set, stores the inference record every settlement with
	// a spend part brings, before the postflight adds it to the cache. A
	// record it cannot store goes to the spend cache's Redis outbox, which
	// RunOutbox drains into it; one neither can store is answered 503 and
	// retried by the filter.
	Ledger RecordStore
	// LedgerTimeout bounds one record insert (default 500ms): a ledger
	// slower than that has the record kept in the outbox instead, so a
	// database that hangs does not hold settlements.
	LedgerTimeout time.Duration
}

// RecordStore is the part of the ledger a settlement and the outbox drain
// write to.
type RecordStore interface {
	InsertRecord(ctx context.Context, r ledger.Record) (inserted bool, err error)
	InsertRecords(ctx context.Context, rs []ledger.Record) (inserted int, err error)
	Ping(ctx context.Context) error
}

// maxBody bounds a request body: the largest valid plan (wire.MaxOps ops of
// wire.MaxLimits limits, keys of wire.MaxKeyLen) is well under it.
const maxBody = 256 << 10

// Server is the stateless HTTP front of the Redis buckets.
type Server struct {
	store   *Buckets
	auth    []byte
	m       *metrics
	log     *slog.Logger
	timeout time.Duration
	mux     *http.ServeMux
	ledger  RecordStore
	// ledgerTimeout bounds one insert; ledgerDown is set when the ledger
	// failed one and cleared when the outbox drain finds it answering.
	ledgerTimeout time.Duration
	ledgerDown    atomic.Bool
	// outboxSeen is set while the outbox may hold records (this replica
	// kept one, or its last drain found some): a record inserted then is
	// looked up there first, so a retried settlement whose first attempt
	// was kept does not run its postflight twice.
	outboxSeen atomic.Bool
	// calls are the /v1 paths, for the mux and for Front.
	calls map[string]route
	// refused logs calls without the token, at most one line per 10 s.
	refused refusals
}

// New builds the service's handler.
func New(c Config) *Server {
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RedisTimeout <= 0 {
		c.RedisTimeout = 2 * time.Second
	}
	if c.LedgerTimeout <= 0 {
		c.LedgerTimeout = 500 * time.Millisecond
	}
	s := &Server{store: c.Buckets, auth: []byte("Bearer " + c.Token), m: newMetrics(c.Registry), log: c.Logger, timeout: c.RedisTimeout, mux: http.NewServeMux(), ledger: c.Ledger, ledgerTimeout: c.LedgerTimeout}
	if c.Buckets != nil {
		c.Buckets.onScript = s.m.script
		if sc := c.Buckets.spend; sc != nil && sc.OnLoad == nil {
			sc.OnLoad = s.m.spendLoad
		}
	}
	s.calls = map[string]route{wire.PathAdmit: {"admit", s.admit}, wire.PathSettle: {"settle", s.settle}, wire.PathRelease: {"release", s.release},
		wire.PathLevels: {"levels", s.levels}}
	for path, c := range s.calls {
		s.mux.HandleFunc("POST "+path, s.guard(c))
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	s.mux.HandleFunc("GET /readyz", s.ready)
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(c.Registry, promhttp.HandlerOpts{}))
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handler answers one /v1 call and returns its outcome label.
type handler func(ctx context.Context, w http.ResponseWriter, body []byte) string

// route is a /v1 path's operation label and handler.
type route struct {
	op     string
	handle handler
}

// authorized reports the Authorization header's value to be the token's.
func (s *Server) authorized(got []byte) bool {
	return len(s.auth) > len("Bearer ") && subtle.ConstantTimeCompare(got, s.auth) == 1
}

// refuse answers a caller without the token, and logs it (rate-limited).
func (s *Server) refuse(w http.ResponseWriter, op string, start time.Time, from net.Addr) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	http.Error(w, "unauthorized", http.StatusUnauthorized)
	s.m.observe(op, "unauthorized", start)
	s.refused.note(s.log, op, from)
}

// answer is guard for a call Front read: its path is one of s.calls and its
// body was read whole.
func (s *Server) answer(ctx context.Context, w http.ResponseWriter, h head, body []byte) {
	start := time.Now()
	c := s.calls[h.path]
	if !s.authorized(h.auth) {
		s.refuse(w, c.op, start, h.peer)
		return
	}
	s.m.observe(c.op, c.handle(ctx, w, body), start)
}

// guard authenticates, reads the bounded body, applies the Redis deadline
// and records metrics, so the operation handlers see only valid callers.
func (s *Server) guard(c route) http.HandlerFunc {
	op, h := c.op, c.handle
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if !s.authorized([]byte(r.Header.Get("Authorization"))) {
			s.refuse(w, op, start, remoteAddr(r.RemoteAddr))
			return
		}
		buf := bufs.Get().(*bytes.Buffer)
		defer putBuf(buf)
		buf.Reset()
		if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBody)); err != nil {
			http.Error(w, "body unreadable or too large", http.StatusBadRequest)
			s.m.observe(op, "bad_request", start)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.timeout)
		defer cancel()
		s.m.observe(op, h(ctx, w, buf.Bytes()), start)
	}
}

// bufs pools request bodies and answers: an admission reads and writes a
// few kilobytes, and allocating them afresh on every call showed in the
// service's CPU profile.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putBuf returns a buffer unless a rare huge body grew it past what is
// worth keeping.
func putBuf(b *bytes.Buffer) {
	if b.Cap() <= 64<<10 {
		bufs.Put(b)
	}
}

func (s *Server) admit(ctx context.Context, w http.ResponseWriter, body []byte) string {
	req, err := wire.DecodeAdmitRequest(body)
	if err != nil {
		return badRequest(w, err.Error())
	}
	if err := req.Validate(); err != nil {
		return badRequest(w, "invalid plan: "+err.Error())
	}
	plan := req.Plan()
	o, vd, err := s.store.AdmitSpend(ctx, plan, req.HoldID)
	if errors.Is(err, limit.ErrSpendUnavailable) {
		// The spend part could not be checked: nothing was admitted, and
		// the filter answers 503 spend_store_unavailable.
		s.m.spendErrors.WithLabelValues("preflight").Inc()
		s.log.Error("spend preflight failed", "error", err)
		writeAdmit(w, wire.AdmitResponse{Spend: &wire.SpendVerdict{Checked: true, Unavailable: true}})
		return "spend_unavailable"
	}
	if errors.Is(err, ErrAdmissionAborted) {
		// The caller released this id already: it gave up on this call
		// and will not read the answer; nothing was committed.
		writeAdmit(w, wire.AdmitResponse{Aborted: true})
		return "aborted"
	}
	if err != nil {
		return s.redisFailed(w, "admit", err)
	}
	resp := wire.FromOutcome(o)
	if vd != nil {
		resp.Spend = verdictOf(vd, &plan.Spend)
		s.m.spendRefusal(vd)
	}
	writeAdmit(w, resp)
	if o.Admitted() {
		return "admitted"
	}
	return "refused"
}

func (s *Server) settle(ctx context.Context, w http.ResponseWriter, body []byte) string {
	req, err := wire.DecodeSettleRequest(body)
	if err != nil {
		return badRequest(w, err.Error())
	}
	if !wire.ValidHoldID(req.Hold) || len(req.Keys) > wire.MaxOps {
		return badRequest(w, "invalid hold id or too many keys")
	}
	ended, err := s.store.Settle(ctx, req.Hold, req.Keys, req.Actual)
	if err != nil {
		return s.redisFailed(w, "settle", err)
	}
	// The buckets settle first, so a ledger outage never keeps a hold's
	// tokens reserved; the retried call finds the hold ended and stores
	// the record then.
	if req.Spend != nil && s.ledger != nil {
		err := s.recordSpend(ctx, req.Hold, req.Spend)
		if errors.Is(err, errLedgerDown) {
			w.Header().Set("Retry-After", "5")
			http.Error(w, "spend ledger unavailable", http.StatusServiceUnavailable)
			return "ledger_error"
		}
		if err != nil {
			return badRequest(w, "invalid spend record: "+err.Error())
		}
	}
	if req.Spend != nil && s.ledger == nil {
		// no ledger to count the call: its reservation just ends
		s.unhold(ctx, req.Spend.Team, req.Hold)
	}
	return answerEnd(w, ended)
}

// unhold ends a hold's spend reservation. A failure is logged and
// counted: the reservation lapses on its own (spendcache HoldTTL).
func (s *Server) unhold(ctx context.Context, team, hold string) {
	if s.store.spend == nil {
		return
	}
	if _, err := s.store.spend.Unhold(ctx, team, hold); err != nil {
		s.m.spendErrors.WithLabelValues("unhold").Inc()
		s.log.Error("spend reservation not given back; it lapses on its own", "error", err)
	}
}

func (s *Server) release(ctx context.Context, w http.ResponseWriter, body []byte) string {
	req, err := wire.DecodeReleaseRequest(body)
	if err != nil {
		return badRequest(w, err.Error())
	}
	if !wire.ValidHoldID(req.Hold) || len(req.Keys) > wire.MaxOps {
		return badRequest(w, "invalid hold id or too many keys")
	}
	ended, err := s.store.Release(ctx, req.Hold, req.Keys)
	if err != nil {
		return s.redisFailed(w, "release", err)
	}
	if req.Spend {
		s.unhold(ctx, req.Team, req.Hold)
	}
	return answerEnd(w, ended)
}

func answerEnd(w http.ResponseWriter, ended bool) string {
	writeBody(w, wire.AppendEndResponse(make([]byte, 0, 16), wire.EndResponse{Ended: ended}))
	if ended {
		return "ended"
	}
	return "already_ended"
}

func (s *Server) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.timeout)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		s.m.redisErrors.WithLabelValues("ready").Inc()
		http.Error(w, "redis unreachable", http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "ready\n")
}

func (s *Server) redisFailed(w http.ResponseWriter, op string, err error) string {
	s.m.redisErrors.WithLabelValues(op).Inc()
	s.log.Error("redis call failed", "operation", op, "error", err)
	w.Header().Set("Retry-After", "1")
	http.Error(w, "store unavailable", http.StatusServiceUnavailable)
	return "redis_error"
}

func badRequest(w http.ResponseWriter, msg string) string {
	http.Error(w, msg, http.StatusBadRequest)
	return "bad_request"
}

func writeAdmit(w http.ResponseWriter, r wire.AdmitResponse) {
	buf := bufs.Get().(*bytes.Buffer)
	defer putBuf(buf)
	buf.Reset()
	writeBody(w, wire.AppendAdmitResponse(buf.Bytes()[:0], r))
}

// contentType is shared, so setting it allocates nothing per answer.
var contentType = []string{"application/json"}

func writeBody(w http.ResponseWriter, b []byte) {
	w.Header()["Content-Type"] = contentType
	_, _ = w.Write(b)
}

// remoteAddr is net/http's RemoteAddr text as a net.Addr for the refusal log.
type remoteAddr string

func (a remoteAddr) Network() string { return "tcp" }
func (a remoteAddr) String() string  { return string(a) }
