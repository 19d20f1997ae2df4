package mockllm

import (
	"context"
	"sync"
)

// Tally collects Served records so tests can assert how many requests reached the backend and what
// it reported; pass its Observe method as Options.OnServed. The zero value is ready to use.
type Tally struct {
	mu      sync.Mutex
	served  []Served
	changed chan struct{} // closed and replaced on every Observe
}

// Observe records one request; it is safe for concurrent use.
func (t *Tally) Observe(s Served) {
	t.mu.Lock()
	t.served = append(t.served, s)
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
	t.mu.Unlock()
}

// Count is the number of requests observed so far.
func (t *Tally) Count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.served)
}

// All returns a copy of every record, in completion order.
func (t *Tally) All() []Served {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Served(nil), t.served...)
}

// WaitCount blocks until at least n requests were observed or ctx ends, so a test can wait for a
// handler that finishes after its client has gone (a cut stream) without sleeping.
func (t *Tally) WaitCount(ctx context.Context, n int) error {
	for {
		t.mu.Lock()
		if len(t.served) >= n {
			t.mu.Unlock()
			return nil
		}
		if t.changed == nil {
			t.changed = make(chan struct{})
		}
		ch := t.changed
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
