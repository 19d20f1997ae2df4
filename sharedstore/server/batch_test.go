package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// concurrentAdmits admits p from n goroutines at once, each once.
func concurrentAdmits(t *testing.T, e env, p limit.Plan, n int) []limit.Outcome {
	t.Helper()
	out, errs := admitsAtOnce(e, p, n)
	for _, err := range errs {
		require.NoError(t, err)
	}
	return out
}

// admitsAtOnce is concurrentAdmits for a test's own goroutine, where a
// failing require would end that goroutine and leave the test waiting: it
// returns the errors for the test to check.
func admitsAtOnce(e env, p limit.Plan, n int) ([]limit.Outcome, []error) {
	out := make([]limit.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i], errs[i] = e.store.Admit(context.Background(), p)
		}()
	}
	close(start)
	wg.Wait()
	return out, errs
}

func TestConcurrentAdmissionsShareRoundTripsAndEachCountsOnce(t *testing.T) {
	e := newEnv(t, false)
	tk := uniq("tk")
	l := minute(1000)
	const n = 64
	e.rt.n.Store(0)
	out := concurrentAdmits(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}, n)
	ids := map[string]bool{}
	for _, o := range out {
		require.True(t, o.Admitted())
		ids[o.Hold.ID] = true
	}
	require.Len(t, ids, n, "every admission has its own hold")
	require.InDelta(t, 1000-10*n, level(t, e, tk, l), 0.5, "each admission took its tokens exactly once")
	require.Less(t, e.rt.n.Load(), int64(n), "concurrent scripts leave in shared pipelines")
	require.GreaterOrEqual(t, e.rt.n.Load(), int64(n/maxBatch))
}

func TestABatchReloadsAScriptRedisForgot(t *testing.T) {
	e := newEnv(t, false)
	b := e.store.batch
	tk := uniq("tk")
	l := minute(1000)
	// hold every sender slot so that all 32 calls queue into one batch
	b.mu.Lock()
	b.senders = maxSenders
	b.mu.Unlock()
	done := make(chan []limit.Outcome)
	errc := make(chan []error, 1)
	go func() {
		out, errs := admitsAtOnce(e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}, 32)
		errc <- errs
		done <- out
	}()
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.pending) == 32
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, e.c.ScriptFlush(context.Background()).Err())
	require.NoError(t, e.c.FunctionFlush(context.Background()).Err())
	b.mu.Lock()
	b.senders = 1
	b.mu.Unlock()
	b.next() // one sender takes the queue: every FCALL in it meets a missing function, then its EVALSHA NOSCRIPT
	out := <-done
	for _, err := range <-errc {
		require.NoError(t, err)
	}
	for _, o := range out {
		require.True(t, o.Admitted())
	}
	require.InDelta(t, 1000-10*32, level(t, e, tk, l), 0.5)
	b.mu.Lock()
	require.Zero(t, b.senders, "the sender slot is freed once the queue is empty")
	b.mu.Unlock()
}

func TestAQueuedCallerThatGaveUpIsNeverSent(t *testing.T) {
	e := newEnv(t, false)
	b := e.store.batch
	tk := uniq("tk")
	l := minute(1000)
	p := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}
	// every sender slot is taken, so both calls queue
	b.mu.Lock()
	b.senders = maxSenders
	b.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp, kept := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := e.store.Admit(ctx, p)
		gaveUp <- err
	}()
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) == 1 }, 5*time.Second, time.Millisecond)
	go func() {
		_, err := e.store.Admit(context.Background(), p)
		kept <- err
	}()
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) == 2 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled, "the caller gives up at its own deadline")
	b.next() // the sender that finishes next takes the queue
	require.NoError(t, <-kept)
	require.InDelta(t, 990, level(t, e, tk, l), 0.5, "only the call still waited for was run: a filter that gave up may release or retry")
}

// The sender that finishes makes the first queued caller still waiting the
// sender of the queue; callers that gave up are skipped, never sent, and a
// queue of only such callers frees the sender slot.
func TestTheFirstQueuedCallerStillWaitingSendsTheQueue(t *testing.T) {
	for _, tt := range []struct {
		name   string
		gaveUp []bool
	}{
		{"all wait", []bool{false, false, false}},
		{"the first gave up", []bool{true, false, false}},
		{"only the last waits", []bool{true, true, false}},
		{"all gave up", []bool{true, true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, false)
			b := e.store.batch
			tk := uniq("tk")
			l := minute(1000)
			p := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}
			b.mu.Lock()
			b.senders = maxSenders
			b.mu.Unlock()
			errc := make([]chan error, len(tt.gaveUp))
			cancels := make([]context.CancelFunc, len(tt.gaveUp))
			kept := 0
			for i, gaveUp := range tt.gaveUp {
				ctx, cancel := context.WithCancel(context.Background())
				cancels[i] = cancel
				errc[i] = make(chan error, 1)
				go func() {
					_, err := e.store.Admit(ctx, p)
					errc[i] <- err
				}()
				require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) == i+1 }, 5*time.Second, time.Millisecond)
				if !gaveUp {
					kept++
				}
			}
			for i, gaveUp := range tt.gaveUp {
				if gaveUp {
					cancels[i]()
					require.ErrorIs(t, <-errc[i], context.Canceled)
				}
			}
			b.next()
			for i, gaveUp := range tt.gaveUp {
				if !gaveUp {
					require.NoError(t, <-errc[i])
				}
				cancels[i]()
			}
			require.InDelta(t, 1000-10*kept, level(t, e, tk, l), 0.5, "only the callers still waiting were sent")
			require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.senders == 0 && len(b.pending) == 0 }, 5*time.Second, time.Millisecond)
		})
	}
}
