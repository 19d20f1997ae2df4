//go:build !wasip1

// Package admin is the operators' HTTP API of the fleet spend limits: a
// team's spend limits, its spend per scope and period, the price lists and
// the team balance, kept in the PostgreSQL ledger. Every change is
// committed to the ledger first; then the team's Redis spend cache is
// invalidated (its policy, usage and balance keys deleted), and the spend
// cache reloads them from the ledger on the next admission. So a changed
// limit keeps the spend counted so far, a removed limit is no longer
// checked, and a re-added limit starts from the period's aggregate and
// pending estimates, never from a count of its own.
//
// It has its own bearer token, distinct from the data plane's: a filter's
// token cannot change a limit. Bodies are JSON decoded strictly (unknown or
// repeated members and inexact amounts are refused with 400) and amounts
// are exact decimal USD strings, held as integer nano-USD.
//
// Native only: it is not compiled into the .wasm.
package admin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// Prefix is the path every admin route is under.
const Prefix = "/v1/admin/"

// Config is what the admin API needs.
type Config struct {
	Ledger *ledger.Ledger
	// Redis holds the spend cache the API invalidates and reads back.
	Redis redis.UniversalClient
	// Token is the admin bearer token ("Authorization: Bearer <token>"),
	// compared in constant time and never logged.
	Token string
	// Logger defaults to slog.Default(). Changes are logged (team, scope,
	// amounts), tokens never.
	Logger *slog.Logger
	// Now is the clock the spend report's default period is read from
	// (default time.Now).
	Now func() time.Time
	// Timeout bounds each request's ledger and Redis work (default 10s).
	Timeout time.Duration
	// Reinvalidate is how long after a change the team's cache is
	// invalidated a second time (default 2s; negative: never). A cache
	// load that read the ledger just before the commit may fill the keys
	// again just after the first invalidation, with the old policy; the
	// second one removes what such a load wrote.
	Reinvalidate time.Duration
}

// maxBody bounds a request body; the largest is a price list.
const maxBody = 1 << 20

// Server is the admin API's handler.
type Server struct {
	ledger  *ledger.Ledger
	redis   redis.UniversalClient
	auth    []byte
	log     *slog.Logger
	now     func() time.Time
	timeout time.Duration
	again   time.Duration
	mux     *http.ServeMux
	// patterns are the routes in the order New adds them, for the index.
	patterns []string

	mu     sync.Mutex
	timers map[*time.Timer]struct{}
	closed bool
}

// New builds the handler. An empty token is refused: it would let every
// caller change limits.
func New(c Config) (*Server, error) {
	switch {
	case c.Token == "":
		return nil, errors.New("admin: empty token")
	case c.Ledger == nil || c.Redis == nil:
		return nil, errors.New("admin: a ledger and a Redis client are required")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Reinvalidate == 0 {
		c.Reinvalidate = 2 * time.Second
	}
	s := &Server{ledger: c.Ledger, redis: c.Redis, auth: []byte("Bearer " + c.Token), log: c.Logger,
		now: c.Now, timeout: c.Timeout, again: c.Reinvalidate, mux: http.NewServeMux(), timers: map[*time.Timer]struct{}{}}
	const team = "/v1/admin/teams/{team}"
	const limit = team + "/spend-limits/{scope}/{id}/{period}"
	s.route("PUT "+limit, s.putLimit)
	s.route("DELETE "+limit, s.deleteLimit)
	s.route("GET "+team+"/spend-limits", s.listLimits)
	s.route("GET "+team+"/spend", s.spendReport)
	s.route("PUT /v1/admin/prices", s.putPrices)
	s.route("GET /v1/admin/prices", s.listPrices)
	s.route("PUT "+team+"/balance", s.putBalance)
	s.route("GET "+team+"/balance", s.getBalance)
	s.route("POST "+team+"/balance/top-up", s.topUp)
	s.route("GET /v1/admin/{$}", s.index)
	return s, nil
}

// handler serves one admin call: it returns the status and the body to
// answer with (an errorBody for a failure).
type handler func(ctx context.Context, r *http.Request, body []byte) (int, any)

type errorBody struct {
	Error string `json:"error"`
	// Committed is set when the change is in the ledger but what followed
	// it (the cache invalidation) failed: repeating the request is safe
	// and completes it.
	Committed bool `json:"committed,omitempty"`
}

// fail is an error answer.
func fail(status int, msg string) (int, any) { return status, errorBody{Error: msg} }

// ServeHTTP authenticates every call before routing, so an unauthenticated
// caller learns nothing about which routes exist.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	got := []byte(r.Header.Get("Authorization"))
	if subtle.ConstantTimeCompare(got, s.auth) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sharedstore admin"`)
		writeJSON(w, http.StatusUnauthorized, errorBody{Error: "unauthorized: the admin API takes its own bearer token (--admin-token-file)"})
		return
	}
	h, pattern := s.mux.Handler(r)
	if pattern == "" {
		// No route: the mux's own answer (404, or 405 with Allow for a
		// known path), its status kept and its text body put in JSON.
		sw := &statusOnly{header: w.Header()}
		h.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusNotFound
		}
		msg := "no admin route " + r.Method + " " + r.URL.Path
		if sw.status == http.StatusMethodNotAllowed {
			msg = r.Method + " is not allowed on " + r.URL.Path + " (allowed: " + w.Header().Get("Allow") + ")"
		}
		writeJSON(w, sw.status, errorBody{Error: msg})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// statusOnly keeps the status and headers a handler writes and drops its
// body.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header { return s.header }
func (s *statusOnly) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *statusOnly) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}

func (s *Server) route(pattern string, h handler) {
	s.patterns = append(s.patterns, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		status, resp := http.StatusBadRequest, any(errorBody{Error: "body unreadable or larger than 1 MiB"})
		if err == nil {
			ctx, cancel := context.WithTimeout(r.Context(), s.timeout)
			status, resp = h(ctx, r, body)
			cancel()
		}
		writeJSON(w, status, resp)
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		attrs := []any{"method", r.Method, "route", r.Pattern, "path", r.URL.Path, "status", status, "duration", time.Since(start)}
		if e, ok := resp.(errorBody); ok {
			attrs = append(attrs, "error", e.Error)
		}
		s.log.Log(r.Context(), level, "admin request", attrs...)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"answer not encodable"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// ledgerFailed is the answer when the ledger could not be read or written:
// nothing was changed, so the caller may retry.
func (s *Server) ledgerFailed(op string, err error) (int, any) {
	s.log.Error("admin: ledger call failed", "operation", op, "error", err)
	return fail(http.StatusServiceUnavailable, op+": the ledger is unavailable; nothing was changed, retry")
}

// committed finishes a change the ledger holds: it invalidates the team's
// spend cache and answers ok, or 503 with committed set when the cache
// could not be invalidated (a retry of the same request is idempotent and
// invalidates again). The invalidation does not inherit the request's
// cancellation: a caller that hangs up after the commit must not leave the
// cache stale.
func (s *Server) committed(ctx context.Context, team string, ok any) (int, any) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
	defer cancel()
	if err := s.invalidate(ictx, team); err != nil {
		s.log.Error("admin: spend cache not invalidated after a committed change", "team", team, "error", err)
		return http.StatusServiceUnavailable, errorBody{Committed: true,
			Error: "the change is committed in the ledger but the team's spend cache could not be invalidated; repeat the request"}
	}
	s.invalidateAgain(team)
	return http.StatusOK, ok
}

// invalidateAgain schedules the second invalidation of a change (see
// Config.Reinvalidate). Its failure is only logged: the first one
// succeeded, and the cache's own expiry bounds what a late load wrote.
func (s *Server) invalidateAgain(team string) {
	if s.again < 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(s.again, func() {
		s.mu.Lock()
		_, live := s.timers[t]
		delete(s.timers, t)
		s.mu.Unlock()
		if !live {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		if err := s.invalidate(ctx, team); err != nil {
			s.log.Warn("admin: second invalidation failed", "team", team, "error", err)
		}
	})
	s.timers[t] = struct{}{}
}

// Close cancels the second invalidations still waiting, so none runs on a
// Redis client its owner is closing.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for t := range s.timers {
		t.Stop()
		delete(s.timers, t)
	}
}
