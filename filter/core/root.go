// Package core binds the filter to proxy-wasm: each stream's callbacks
// become events of a shared/exchange state machine, which holds every
// admission and settlement rule, and its effects become host, store and
// metric calls. The root owns the config, the stores, the callouts, the
// ticks and the metrics. It talks to the host only through abi.Host, so it
// runs unchanged inside the .wasm and natively against a fake host.
package core

import (
	"strings"

	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/sharedstore"
	"github.com/tokenbudget/tokenbudget/sharedstore/fallback"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/remote"
)

// tickPeriodMs drives retries of remote settlements and hands the metric
// increments summed since the last tick to the host; a tick with nothing
// pending makes no host call.
const tickPeriodMs = 500

// remoteRetryNs bounds how long a settlement or release the store did not
// acknowledge is retried before it is dropped (the bucket then returns the
// budget at its refill rate): ten minutes, so a sharedstore outage shorter
// than that loses no spend record. The VM's stores share one bound on the
// calls waiting (remote.MaxWaiting).
const remoteRetryNs = remote.DefaultRetryForNs

// Root is one plugin instance on one worker VM. It owns the live config,
// the stores, the metric ids and the HTTP callouts in flight: in proxy-wasm
// callouts belong to the root context, so their answers come here even
// when the stream that asked is gone.
type Root struct {
	id   uint32
	host abi.Host
	// vm is what this root shares with the other roots of its VM: the
	// callouts in flight and the fleet stores (see VM).
	vm *VM
	// now is host.NowNanos, bound once for the exchanges' clock.
	now func() int64

	rt    *config.Runtime
	store sharedstore.Store
	// local is this config's shared-data store, store itself or the
	// fallback's local side: its pending refunds are flushed on the tick.
	local *local.Store
	// levels writes the gauges of the buckets no tenant owns on the tick,
	// nil when the config has none in shared data.
	levels *levelGauges
	// remote is this config's fleet store, nil under storage "memory".
	remote  *remote.Store
	deleted bool

	// anyClamp is true when some model clamps its output ceiling, so bodies
	// on every route may be rewritten.
	anyClamp bool

	metrics *metricSet
	mapFill mapFill
	health  storeHealth // the fleet store's reachability, across reloads
	// scratch is the host's scratch reads, nil when it has none.
	scratch abi.ScratchReader
	// adder writes a response's success headers in two host calls, nil
	// when the host cannot (each is then a replace).
	adder abi.HeaderAdder
	// headers is reused for each admitted response's x-ratelimit-* headers.
	headers refusal.HeaderBuffer
	// free holds deleted streams nothing can reach any more, for reuse.
	free []*Stream
	// keys caches the SHA-256 of the API keys this root saw: a client sends
	// the same key on every request.
	keys *identity.KeyCache
}

// maxCachedKeys bounds the key hashes a root remembers.
const maxCachedKeys = 1024

// maxFreeStreams bounds the streams kept for reuse: enough for a burst of
// concurrent requests on one worker, small enough not to matter.
const maxFreeStreams = 64

// recycle keeps a deleted stream for the next one when nothing can call
// into it again: a shared-data store answers before Admit returns and
// keeps no reference, while a fleet store's callout may still deliver an
// answer to it, so those streams are left to the collector.
func (r *Root) recycle(s *Stream) {
	if len(r.free) >= maxFreeStreams {
		return
	}
	if _, local := s.store.(*local.Store); s.store != nil && !local {
		return
	}
	s.x.Reset() // nothing of the request is kept, only buffers
	s.root, s.store, s.admitting, s.answered, s.answer = nil, nil, false, false, limit.Outcome{}
	r.free = append(r.free, s)
}

// vmRemote is a fleet store and the root whose config made it: until that
// root is deleted, its streams may still settle through the store.
type vmRemote struct {
	store *remote.Store
	owner *Root
	// dropsSeen are the store's drop counts already added to the metrics
	// (calls, then inference records among them).
	dropsSeen [2]uint64
}

// NewRoot makes the root of one plugin context alone in a VM of its own,
// as a test drives it; VM.NewPluginContext makes the roots of one VM.
func NewRoot(id uint32, h abi.Host) *Root { return newVM(h).newRoot(id) }

func (v *VM) newRoot(id uint32) *Root {
	h := v.host
	sr, _ := h.(abi.ScratchReader)
	ad, _ := h.(abi.HeaderAdder)
	return &Root{
		id:      id,
		host:    h,
		vm:      v,
		now:     h.NowNanos,
		metrics: newMetricSet(h),
		mapFill: mapFill{h: h},
		health:  storeHealth{h: h},
		scratch: sr,
		adder:   ad,
		keys:    identity.NewKeyCache(maxCachedKeys),
	}
}

// OnConfigure applies a plugin config. A config that fails validation is
// refused (false) and the previous one keeps running: the canary VM makes
// Envoy reject it before any worker sees it, and the log says why.
func (r *Root) OnConfigure(raw []byte) bool {
	rt, warnings, err := config.Load(raw)
	if err == nil {
		var getenv func(string) (string, bool)
		if e, ok := r.host.(abi.Environment); ok {
			getenv = e.Getenv
		}
		err = rt.ResolveEnv(getenv)
	}
	if err != nil {
		// One log line per problem, as `tbconfig validate` prints them: a
		// proxy's log shows a line's quotes as written but a newline inside
		// one entry as an escape, so one entry per error stays readable.
		for _, line := range strings.Split(err.Error(), "\n") {
			r.host.Log(abi.LogError, "tokenbudget: plugin config rejected: error: "+line)
		}
		return false
	}
	for _, w := range warnings {
		r.host.Log(abi.LogWarn, "tokenbudget: config warning: "+w)
	}
	localStore := local.New(newSharedData(r.host), r.host.NowNanos, rt.MaxBuckets)
	localStore.SetRefundBatching(rt.RefundBatching)
	localStore.RefuseOnFullMap(rt.RefuseOnFullBucketMap)
	localStore.OnMapFill(r.mapFill.record)
	var store sharedstore.Store = localStore
	r.remote = nil
	if rt.Storage == config.StorageRedis {
		r.remote = remote.New(&caller{host: r.host, vm: r.vm, cluster: rt.Redis.Cluster}, remote.Config{
			Token:      rt.Redis.Token,
			Authority:  rt.Redis.Authority,
			TimeoutMs:  uint32(rt.Redis.TimeoutMS),
			RetryForNs: remoteRetryNs,
			Queue:      &r.vm.queue,
		}, r.host.NowNanos)
		// While the store is down a replica admits on its own buckets, sized
		// to its share of the fleet budget when a division source says so.
		var localPlan func(limit.Plan) limit.Plan
		if rt.Fallback() != nil {
			localPlan = func(p limit.Plan) limit.Plan { return budget.FallbackPlan(rt, p) }
		}
		// Spend holds through an outage: the last verdicts are kept in
		// shared data and admitted against, and what is admitted meanwhile
		// reaches the ledger once the service answers.
		store = fallback.New(watched{Store: r.remote, health: &r.health}, localStore, rt.Redis.FallbackToMemory, r.countUnavailable, localPlan,
			fallback.Remember(localStore), fallback.Records(r.remote))
		r.vm.remotes = append(r.vm.remotes, vmRemote{store: r.remote, owner: r})
	}
	// Every root ticks: its metric increments reach the host on the tick,
	// and an earlier config's streams may still hand their settlements to
	// its fleet store, which only ticks retry.
	r.host.SetTickPeriod(tickPeriodMs)
	if r.local != nil {
		// The retired store's streams may still settle through it, and no
		// tick flushes it any more: its refunds are written now and later
		// ones at once.
		r.local.Close()
	}
	r.rt = rt
	r.store = store
	r.local = localStore
	r.levels = levelsFor(r.host, rt, r.remote)
	r.anyClamp = false
	for _, m := range rt.Models {
		r.anyClamp = r.anyClamp || m.Clamp
	}
	r.host.Log(abi.LogInfo, "tokenbudget: plugin config applied")
	return true
}

// OnTick hands the root's pending metric increments to the host, writes
// the shared-data store's pending refunds (with refund_batching other
// workers see a refund at most one tick late), retries the VM's undelivered settlements and
// releases, and forgets the fleet store of a deleted root once it has
// nothing left to send.
func (r *Root) OnTick() {
	r.metrics.flush()
	if r.local != nil {
		r.local.Flush()
	}
	r.levels.write(r.local)
	v := r.vm
	kept := v.remotes[:0]
	for _, rem := range v.remotes {
		rem.store.Tick()
		r.metrics.countDrops(&rem)
		if !rem.owner.deleted || rem.store.Pending() > 0 {
			kept = append(kept, rem)
		}
	}
	for i := len(kept); i < len(v.remotes); i++ {
		v.remotes[i] = vmRemote{}
	}
	v.remotes = kept
}

// OnHTTPCallResponse hands a callout's answer to whoever made the call. A
// failed call (reset, timeout) arrives as (0, 0, 0).
func (r *Root) OnHTTPCallResponse(token uint32, numHeaders, bodySize, numTrailers int) {
	cb, ok := r.vm.calls[token]
	if !ok {
		return
	}
	delete(r.vm.calls, token)
	if numHeaders == 0 && bodySize == 0 && numTrailers == 0 {
		_, msg := r.host.GetStatus()
		cb(0, nil, errCallFailed(msg))
		return
	}
	status := 0
	if hs, st := r.host.GetHeaders(abi.MapHTTPCallResponseHeaders); st == abi.StatusOK {
		for _, h := range hs {
			if h[0] == ":status" {
				status = atoi(h[1])
			}
		}
	}
	var body []byte
	if bodySize > 0 {
		body, _ = r.host.GetBuffer(abi.BufferHTTPCallResponseBody, 0, bodySize)
	}
	cb(status, body, nil)
}

func (r *Root) NewHttpContext(contextID uint32) types.HttpContext { return r.NewStream(contextID) }

// NewStream is NewHttpContext for the binding, which then calls the
// stream's OnDone and OnDelete without asking it for them.
func (r *Root) NewStream(contextID uint32) abi.Stream {
	var s *Stream
	if n := len(r.free); n > 0 {
		s, r.free[n-1] = r.free[n-1], nil
		r.free = r.free[:n-1]
	} else {
		s = &Stream{}
		s.onAdmitted = s.admitted
	}
	s.root, s.id = r, contextID
	return s
}

// OnPluginDone hands the pending metric increments and refunds to the
// host: no tick follows, so a refund settled later is written at once.
func (r *Root) OnPluginDone() bool {
	r.metrics.flush()
	if r.local != nil {
		r.local.Close()
	}
	return true
}

// OnDelete marks the root gone: its streams are all done, so its fleet
// store receives no new holds and is dropped once its calls are delivered.
// Increments counted since OnPluginDone (a late callout answer) are flushed too.
func (r *Root) OnDelete() {
	r.metrics.flush()
	if r.local != nil {
		r.local.Close()
	}
	r.deleted = true
}

func (r *Root) countUnavailable(dimension limit.Dimension, action string) {
	r.metrics.count(metricRedisUnavailable(dimension, action), 1)
}
