package server

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// refusalLogEvery is the least time between two log lines about calls
// refused for a wrong or missing token. A filter fleet with the wrong token
// makes every admission one such call, and the log must not grow with the
// traffic; the line after a quiet spell counts the calls it did not log.
const refusalLogEvery = 10 * time.Second

// refusals rate-limits the log of refused calls. It never logs the token
// the caller sent, only where the call came from.
type refusals struct {
	mu         sync.Mutex
	now        func() time.Time
	last       time.Time
	suppressed int
}

// note logs one refused call, or counts it when a line was written less
// than refusalLogEvery ago.
func (r *refusals) note(log *slog.Logger, op string, from net.Addr) {
	r.mu.Lock()
	now := time.Now()
	if r.now != nil {
		now = r.now()
	}
	if !r.last.IsZero() && now.Sub(r.last) < refusalLogEvery {
		r.suppressed++
		r.mu.Unlock()
		return
	}
	n := r.suppressed
	r.last, r.suppressed = now, 0
	r.mu.Unlock()
	peer := "unknown"
	if from != nil {
		peer = from.String()
	}
	log.Warn("sharedstore: refused a call without the service's token (401): the filter's rate_limiting.redis token "+
		"must be the one given by --token-file or SHAREDSTORE_TOKEN",
		"op", op, "from", peer, "refused_unlogged", n, "log_every", refusalLogEvery.String())
}
