// Package core is the filter's stream state machine: it drives the pure
// budget logic in shared/ and the stores in sharedstore/ from proxy-wasm
// callbacks. It talks to the host only through abi.Host, so it runs
// unchanged inside the .wasm and natively against a fake host.
package core

import (
	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/sharedstore"
	"github.com/tokenbudget/tokenbudget/sharedstore/fallback"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/remote"
)

// tickPeriodMs drives retries of remote settlements; a tick with nothing
// pending costs one map check.
const tickPeriodMs = 500

// remoteRetryNs bounds how long a settlement or release the store did not
// acknowledge is retried before it is dropped; the bucket then returns the
// budget at its refill rate (seed 004, Reconciliation).
const remoteRetryNs = 30_000_000_000

// Root is one plugin instance on one worker VM. It owns the live config,
// the stores, the metric ids and the HTTP callouts in flight: in proxy-wasm
// callouts belong to the root context, so their answers come here even
// when the stream that asked is gone.
type Root struct {
	id   uint32
	host abi.Host

	rt    *config.Runtime
	store sharedstore.Store
	// remotes are ticked so their unacknowledged settlements are retried; a
	// reload keeps the previous one until its holds can no longer need it.
	remotes []*remote.Store

	// anyClamp is true when some model clamps its output ceiling, so bodies
	// on every route may be rewritten.
	anyClamp bool

	metrics *metricSet
	calls   map[uint32]func(status int, body []byte, err error)
	streams map[uint32]*Stream
}

// NewRoot is the factory the ABI binding calls for each root context.
func NewRoot(id uint32, h abi.Host) *Root {
	return &Root{
		id:      id,
		host:    h,
		metrics: newMetricSet(h),
		calls:   map[uint32]func(int, []byte, error){},
		streams: map[uint32]*Stream{},
	}
}

func (r *Root) OnVMStart(vmConfig []byte) bool { return true }

// OnConfigure applies a plugin config. A config that fails validation is
// refused (false) and the previous one keeps running: the canary VM makes
// Envoy reject it before any worker sees it, and the log says why.
func (r *Root) OnConfigure(raw []byte) bool {
	rt, warnings, err := config.Load(raw)
	if err != nil {
		r.host.Log(abi.LogError, "tokenbudget: plugin config rejected: "+err.Error())
		return false
	}
	for _, w := range warnings {
		r.host.Log(abi.LogWarn, "tokenbudget: config warning: "+w)
	}
	localStore := local.New(sharedData{r.host}, r.host.NowNanos, rt.MaxBuckets)
	var store sharedstore.Store = localStore
	if rt.Storage == config.StorageRedis {
		rem := remote.New(&caller{root: r, cluster: rt.Redis.Cluster}, remote.Config{
			Token:      rt.Redis.Token,
			Authority:  rt.Redis.Authority,
			TimeoutMs:  uint32(rt.Redis.TimeoutMS),
			RetryForNs: remoteRetryNs,
		}, r.host.NowNanos)
		store = fallback.New(rem, localStore, rt.Redis.FallbackToMemory, r.countUnavailable)
		r.remotes = append(r.remotes, rem)
		if len(r.remotes) > 2 {
			r.remotes = r.remotes[len(r.remotes)-2:]
		}
		r.host.SetTickPeriod(tickPeriodMs)
	}
	r.rt = rt
	r.store = store
	r.anyClamp = false
	for _, m := range rt.Models {
		r.anyClamp = r.anyClamp || m.Clamp
	}
	r.host.Log(abi.LogInfo, "tokenbudget: plugin config applied")
	return true
}

func (r *Root) OnTick() {
	for _, rem := range r.remotes {
		rem.Tick()
	}
}

// OnHTTPCallResponse hands a callout's answer to whoever made the call. A
// failed call (reset, timeout) arrives as (0, 0, 0).
func (r *Root) OnHTTPCallResponse(token uint32, numHeaders, bodySize, numTrailers int) {
	cb, ok := r.calls[token]
	if !ok {
		return
	}
	delete(r.calls, token)
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

func (r *Root) NewHTTPContext(contextID uint32) abi.HTTPContext {
	s := &Stream{root: r, id: contextID}
	r.streams[contextID] = s
	return s
}

func (r *Root) OnDone() bool { return true }

func (r *Root) OnDelete() {}

func (r *Root) countUnavailable(dimension, action string) {
	r.metrics.count(metricRedisUnavailable(dimension, action), 1)
}
