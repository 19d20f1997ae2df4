package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends the scripts that concurrent calls run on a single Redis
// server as one pipeline: while one pipeline is on the wire, the calls that
// arrive queue up and leave together in the next, so a busy service pays
// one write and one read system call per batch instead of per call, and
// Redis reads and answers a batch in one turn of its event loop. Under the
// peers benchmark the system calls of the Redis round trip were about a
// fifth of the service's CPU. Nothing waits for a batch to fill: a call
// that finds a sender slot free leaves at once.
//
// Each script in a batch is still one atomic EVALSHA (or FCALL of the same
// code, library.go), so batching changes no script's semantics; a call
// whose own context ends stops waiting (as a lone call would), and is not
// sent if its batch has not left yet.
type batcher struct {
	c       redis.UniversalClient
	mu      sync.Mutex
	pending []*batchCall // waiting for the next pipeline
	senders int          // pipelines on the wire now
	// unreachable records that the last round trip failed to reach Redis.
	unreachable atomic.Bool
}

type batchCall struct {
	ctx  context.Context
	sc   *script
	keys []string
	args []any
	v    any
	err  error
	// done receives once when the call is made the sender of lead, and is
	// closed when the call is answered.
	done chan struct{}
	// lead is the batch this waiting call is to send; gone marks a caller
	// that stopped waiting, never made a sender. Both are under b.mu.
	lead []*batchCall
	gone bool
	// fcall records that the call was sent as its script's function.
	fcall bool
}

const (
	// maxSenders bounds the pipelines in flight at once. Redis runs one
	// script at a time, so a second pipeline in flight only splits the
	// queue into smaller batches: on the peers plan one sender gave the
	// most decisions/s and the least CPU per decision (against 2 and 4).
	maxSenders = 1
	// maxBatch bounds one pipeline (and the latency its last call adds).
	maxBatch = 64
)

func newBatcher(c redis.UniversalClient) *batcher { return &batcher{c: c} }

// run is script.run through the batch. A call that finds a sender free
// sends itself (with whatever queued before it) on its own goroutine, so
// an idle service pays nothing but a lock; otherwise it queues, and the
// sender that finishes next either answers it or makes it the sender of
// the queue, so no goroutine is started and woken per batch.
func (b *batcher) run(ctx context.Context, sc *script, keys []string, args []any) (any, error) {
	call := &batchCall{ctx: ctx, sc: sc, keys: keys, args: args, done: make(chan struct{}, 1)}
	b.mu.Lock()
	if b.senders < maxSenders {
		b.senders++
		batch := append(b.take(), call)
		b.mu.Unlock()
		b.send(batch)
		return call.v, call.err
	}
	b.pending = append(b.pending, call)
	b.mu.Unlock()
	select {
	case <-call.done:
	case <-ctx.Done():
		b.mu.Lock()
		call.gone = call.lead == nil
		b.mu.Unlock()
		if call.gone {
			return nil, ctx.Err()
		}
	}
	if call.lead != nil {
		b.send(call.lead) // answers this call too, as any sender's
	}
	return call.v, call.err
}

// send sends a batch and hands the sender slot on.
func (b *batcher) send(batch []*batchCall) {
	b.exec(batch)
	b.next()
}

// take removes up to maxBatch queued calls; b.mu is held.
func (b *batcher) take() []*batchCall {
	n := min(len(b.pending), maxBatch)
	if n == 0 {
		return make([]*batchCall, 0, 1)
	}
	batch := make([]*batchCall, n, n+1)
	copy(batch, b.pending)
	b.pending = append(b.pending[:0], b.pending[n:]...)
	return batch
}

// next is called by a sender whose batch is answered: the first caller
// still waiting among the calls queued meanwhile becomes their sender (the
// sender's own caller is not kept waiting for them), or the sender slot is
// freed. A batch whose callers all gave up is dropped here.
func (b *batcher) next() {
	for {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.senders--
			b.mu.Unlock()
			return
		}
		batch := b.take()
		for _, c := range batch {
			if !c.gone {
				c.lead = batch
				b.mu.Unlock()
				c.done <- struct{}{}
				return
			}
		}
		b.mu.Unlock()
		b.exec(batch)
	}
}

// exec runs one batch as a pipeline under the latest deadline among its
// calls (each caller still gives up at its own) and answers every call.
// A call whose caller has given up already is not sent, and a call alone
// runs under its caller's own context, exactly as without the batch: a
// filter that timed out and released or retried must not find the script
// it abandoned committed after all. A script Redis does not know (a restart
// or SCRIPT FLUSH emptied its cache) is run again alone by script.run,
// which loads it.
//
// After a round trip that failed other than by an error reply (Redis down,
// a broken connection), the next batch reaches Redis first with a PING and
// only then takes the calls still waiting: go-redis dials and retries under
// the batch's deadline, and a pipeline that waited for Redis to come back
// would otherwise carry calls given up meanwhile.
func (b *batcher) exec(batch []*batchCall) {
	if b.unreachable.Load() {
		ctx, cancel := batchContext(batch)
		if b.c.Ping(ctx).Err() == nil {
			b.unreachable.Store(false)
		}
		cancel()
	}
	live := stillWaiting(batch)
	if len(live) == 0 {
		return
	}
	if l := live[0].sc.lib; l != nil && l.state.Load() == libUnloaded {
		l.load(live[0].ctx, b.c)
		live = stillWaiting(live)
		if len(live) == 0 {
			return
		}
	}
	cmds := make([]*redis.Cmd, 0, len(live))
	switch len(live) {
	case 1:
		cmds = append(cmds, b.c.Do(live[0].ctx, evalArgs(live[0])...))
	default:
		ctx, cancel := batchContext(live)
		defer cancel()
		pipe := b.c.Pipeline()
		for _, c := range live {
			cmds = append(cmds, pipe.Do(ctx, evalArgs(c)...))
		}
		_, _ = pipe.Exec(ctx) // each command carries its own error
	}
	for i, c := range live {
		v, err := cmds[i].Result()
		if err != nil && !isReply(err) {
			b.unreachable.Store(true)
		}
		if c.fcall && functionMissing(err) {
			// nothing ran: run it as the script, and have the next
			// batch load the library again
			c.sc.lib.lost()
			v, err = c.sc.run(c.ctx, b.c, c.keys, c.args)
		} else if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			v, err = c.sc.run(c.ctx, b.c, c.keys, c.args)
		} else if err != nil {
			err = wrapScriptError(c.sc, err)
		}
		c.v, c.err = v, err
		close(c.done)
	}
}

// evalArgs is the call's FCALL, where its script has a loaded function, or
// its EVALSHA, with its keys by reference: go-redis writes a *string as the
// string, where each string boxed in an interface (as EvalSha boxes its
// keys) is an allocation.
func evalArgs(c *batchCall) []any {
	a := make([]any, 0, 3+len(c.keys)+len(c.args))
	if c.fcall = c.sc.lib.loaded(); c.fcall {
		a = append(a, "fcall", c.sc.fn, len(c.keys))
	} else {
		a = append(a, "evalsha", c.sc.sha.Hash(), len(c.keys))
	}
	for i := range c.keys {
		a = append(a, &c.keys[i])
	}
	return append(a, c.args...)
}

// stillWaiting answers the calls whose callers have given up and returns
// the others, in batch's array.
func stillWaiting(batch []*batchCall) []*batchCall {
	live := batch[:0]
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	return live
}

// isReply reports an error Redis answered (as against one of reaching it).
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

func batchContext(batch []*batchCall) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.Background(), latest)
}
