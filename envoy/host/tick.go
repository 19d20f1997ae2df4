package host

import (
	"time"
)

// Tick fires proxy_on_tick once on every root context (all workers) whose tick period is set.
// Tests call it to make timers deterministic; StartTicker does it on the real clock.
func (h *Host) Tick() {
	for _, w := range h.workers {
		w.mu.Lock()
		w.tickLocked(time.Time{})
		w.mu.Unlock()
	}
}

// tickLocked ticks roots that are due at now (zero now: every root with a period).
func (w *worker) tickLocked(now time.Time) {
	v := w.vm
	if v == nil || v.failed {
		return
	}
	for _, c := range v.rootsSnapshot() {
		if c.tickPeriod <= 0 {
			continue
		}
		if !now.IsZero() {
			if now.Before(c.nextTick) {
				continue
			}
			c.nextTick = now.Add(c.tickPeriod)
		}
		v.call(c, v.fn.tick, uint64(c.id))
		if v.failed {
			v.actions = v.actions[:0]
			w.h.failStreams(v)
			return
		}
		v.runActions()
	}
}

// StartTicker fires on_tick on the real clock at each root's period until StopTicker or Close.
func (h *Host) StartTicker() {
	h.tickerMu.Lock()
	defer h.tickerMu.Unlock()
	if h.tickerStop != nil {
		return
	}
	stop, done := make(chan struct{}), make(chan struct{})
	h.tickerStop, h.tickerDone = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				for _, w := range h.workers {
					w.mu.Lock()
					w.tickLocked(now)
					w.mu.Unlock()
				}
			}
		}
	}()
}

// StopTicker stops the background ticker started by StartTicker.
func (h *Host) StopTicker() {
	h.tickerMu.Lock()
	stop, done := h.tickerStop, h.tickerDone
	h.tickerStop, h.tickerDone = nil, nil
	h.tickerMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}
