package mockllm

import (
	"context"
	"net/http"
	"time"
)

// sse writes server-sent events one at a time, flushing each so that a proxy in between has to
// stream, and stops at the first error or when the client goes away.
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	ctx     context.Context
	c       controls
	started bool
	deltas  int64 // content deltas sent, for x-mock-abort-after
	aborted bool
	err     error
}

func newSSE(w http.ResponseWriter, ctx context.Context, c controls) *sse {
	return &sse{w: w, rc: http.NewResponseController(w), ctx: ctx, c: c}
}

// ok reports whether the stream may go on.
func (s *sse) ok() bool { return s.err == nil && !s.aborted }

// send writes one event (name may be empty for OpenAI chat-style data-only events).
func (s *sse) send(name string, data []byte) {
	if !s.ok() {
		return
	}
	if !s.started {
		s.started = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
	} else if s.c.delay > 0 {
		t := time.NewTimer(s.c.delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
			s.err = s.ctx.Err()
			return
		case <-t.C:
		}
	}
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return
	}
	buf := make([]byte, 0, len(name)+len(data)+16)
	if name != "" {
		buf = append(buf, "event: "...)
		buf = append(buf, name...)
		buf = append(buf, '\n')
	}
	buf = append(buf, "data: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		s.err = err
		return
	}
	if err := s.rc.Flush(); err != nil {
		s.err = err
	}
}

// delta sends a content-carrying event and applies x-mock-abort-after.
func (s *sse) delta(name string, data []byte) {
	if !s.ok() {
		return
	}
	if s.c.abortAfter > 0 && s.deltas >= s.c.abortAfter {
		s.aborted = true
		return
	}
	s.send(name, data)
	if s.err == nil {
		s.deltas++
	}
}

// chunks calls emit for each delta of the answer, in order, with the token range it carries, and
// returns the tokens sent before the stream stopped.
func (s *sse) chunks(g generation, emit func(from, count int64)) int64 {
	var sent int64
	for sent < g.output && s.ok() {
		n := min(g.perChunk, g.output-sent)
		emit(sent, n)
		if !s.ok() {
			break
		}
		sent += n
	}
	return sent
}
