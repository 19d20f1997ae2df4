package host

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

const (
	restrictNone uint8 = iota
	restrictInit
	restrictAlloc
)

// pctx is one proxy-wasm context inside a VM: a root (plugin) context or a stream context.
type pctx struct {
	id           uint32
	root         *pctx // nil for a root context
	pluginConfig []byte
	tickPeriod   time.Duration
	nextTick     time.Time
	stream       *Stream
	liveStreams  int  // roots: streams created under this root and not yet done
	retired      bool // roots: replaced by a reload, finished once liveStreams reaches 0
	deleted      bool
}

func (c *pctx) rootCtx() *pctx {
	if c.root != nil {
		return c.root
	}
	return c
}

// export is a guest function with its parameter count, so ABI 0.1.0 signatures (fewer args) work.
type export struct {
	fn     api.Function
	params int
}

// vm is one module instance. Every use happens under its worker's mutex (the canary is private).
type vm struct {
	h          *Host
	worker     int // -1 for the canary
	mod        api.Module
	mem        api.Memory
	ctx        context.Context
	restricted uint8
	failed     bool
	// stopNext is cpp-host's stopNextIteration: proxy_send_local_response during a callback
	// turns that callback's result into Stop. call clears it before each entry.
	stopNext bool

	fn struct {
		malloc, memAlloc, contextCreate, vmStart, configure, tick             export
		reqHeaders, reqBody, reqTrailers, respHeaders, respBody, respTrailers export
		log, done, delete, httpResponse                                       export
	}

	nextID    uint32
	contexts  map[uint32]*pctx
	effective *pctx

	statusCode uint32
	statusMsg  string

	// configBuf is the vm/plugin configuration visible during on_vm_start/on_configure only.
	vmConfigVisible     bool
	pluginConfigVisible []byte
	httpResp            *httpResponse
	nextToken           uint32

	metricIDs  map[uint32]*metric
	nextMetric [3]uint32 // per metric type, as cpp-host's next_{counter,gauge,histogram}_metric_id_

	actions []func()
	stack   [16]uint64
	aStack  [2]uint64
}

func (h *Host) newVM(ctx context.Context, worker int) (*vm, error) {
	v := &vm{h: h, worker: worker, contexts: map[uint32]*pctx{}, nextID: 1, metricIDs: map[uint32]*metric{},
		nextToken: calloutHTTP, nextMetric: [3]uint32{metricCounter, metricGauge, metricHistogram}}
	v.ctx = context.WithValue(context.Background(), vmKey{}, v)
	// Anonymous instances: wazero allows any number of them from one compiled module. No start
	// functions: _initialize is called explicitly, under the restricted list.
	mod, err := h.rt.InstantiateModule(v.ctx, h.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, errors.New("instantiate: " + err.Error())
	}
	v.mod = mod
	v.mem = mod.Memory()
	get := func(name string) export {
		f := mod.ExportedFunction(name)
		if f == nil {
			return export{}
		}
		return export{fn: f, params: len(f.Definition().ParamTypes())}
	}
	v.fn.malloc = get("malloc")
	v.fn.memAlloc = get("proxy_on_memory_allocate")
	v.fn.contextCreate = get("proxy_on_context_create")
	v.fn.vmStart = get("proxy_on_vm_start")
	v.fn.configure = get("proxy_on_configure")
	v.fn.tick = get("proxy_on_tick")
	v.fn.reqHeaders = get("proxy_on_request_headers")
	v.fn.reqBody = get("proxy_on_request_body")
	v.fn.reqTrailers = get("proxy_on_request_trailers")
	v.fn.respHeaders = get("proxy_on_response_headers")
	v.fn.respBody = get("proxy_on_response_body")
	v.fn.respTrailers = get("proxy_on_response_trailers")
	v.fn.log = get("proxy_on_log")
	v.fn.done = get("proxy_on_done")
	v.fn.delete = get("proxy_on_delete")
	v.fn.httpResponse = get("proxy_on_http_call_response")

	// _initialize (WASI reactor), then main(0, 0) (or, since cpp-host e55d150 of 2026-03,
	// __main_void), or _start (command), under Envoy's restricted list. The list stays in force
	// until the host first allocates guest memory: allocMemory lifts every restriction when the
	// module's allocator returns, as cpp-host does, so the rest of start-up runs unrestricted.
	v.restricted = restrictInit
	if f := get("_initialize"); f.fn != nil {
		_, err = f.fn.Call(v.ctx)
		if err == nil {
			if m := get("main"); m.fn != nil && m.params == 2 {
				_, err = m.fn.Call(v.ctx, 0, 0)
			} else if m := get("__main_void"); m.fn != nil && h.opts.Profile == ProfileCurrent {
				_, err = m.fn.Call(v.ctx)
			}
		}
	} else if f := get("_start"); f.fn != nil {
		_, err = f.fn.Call(v.ctx)
	}
	v.restricted = restrictNone
	if err != nil {
		v.trap(err)
		v.close(ctx)
		return nil, errors.New("Failed to initialize Wasm code: " + err.Error())
	}
	return v, nil
}

func (v *vm) close(ctx context.Context) {
	if v.mod != nil {
		_ = v.mod.Close(ctx)
	}
}

// trap records a guest failure and marks the VM failed: Envoy's FailState::RuntimeError.
func (v *vm) trap(err error) {
	v.failed = true
	v.h.addTrap(v.worker, err.Error())
	// Every stream of this VM is affected, not only the one whose callback trapped.
	v.h.failStreams(v)
}

// call enters the VM with ctx as the effective context. It returns the result (0 when the export
// is missing, as Envoy treats a missing callback) and whether the call trapped.
func (v *vm) call(c *pctx, f export, args ...uint64) (uint64, bool) {
	if v.failed {
		return 0, false
	}
	if f.fn == nil {
		return 0, true
	}
	prev := v.effective
	v.effective = c
	v.stopNext = false
	st := v.stack[:]
	n := copy(st, args[:min(len(args), f.params)])
	_ = n
	err := f.fn.CallWithStack(v.ctx, st)
	v.effective = prev
	if err != nil {
		v.trap(err)
		return 0, false
	}
	if len(f.fn.Definition().ResultTypes()) == 0 {
		return 0, true
	}
	return st[0], true
}

// runActions applies what the guest asked for during a VM call (continue, local reply, close)
// after the call returned, as Envoy's addAfterVmCallAction does.
func (v *vm) runActions() {
	for len(v.actions) > 0 {
		a := v.actions[0]
		v.actions = v.actions[1:]
		a()
	}
	v.actions = v.actions[:0]
}

func (v *vm) newContext(root *pctx) *pctx {
	for {
		id := v.nextID
		v.nextID++
		if id == 0 {
			continue
		}
		if _, taken := v.contexts[id]; !taken {
			c := &pctx{id: id, root: root}
			v.contexts[id] = c
			return c
		}
	}
}

// startRoot creates a root context and runs context create, vm start and configure.
func (v *vm) startRoot(cfg []byte) (*pctx, error) {
	root := v.newContext(nil)
	root.pluginConfig = cfg
	if _, ok := v.call(root, v.fn.contextCreate, uint64(root.id), 0); !ok {
		return nil, errors.New("Failed to start base Wasm: trap in proxy_on_context_create")
	}
	v.vmConfigVisible = true
	r, ok := v.call(root, v.fn.vmStart, uint64(root.id), uint64(len(v.h.opts.VMConfig)))
	v.vmConfigVisible = false
	if !ok {
		return nil, errors.New("Failed to start base Wasm: trap in proxy_on_vm_start")
	}
	if v.fn.vmStart.fn != nil && uint32(r) == 0 {
		return nil, errors.New("Failed to start base Wasm: proxy_on_vm_start returned false")
	}
	v.pluginConfigVisible = cfg
	r, ok = v.call(root, v.fn.configure, uint64(root.id), uint64(len(cfg)))
	v.pluginConfigVisible = nil
	if !ok {
		return nil, errors.New("Failed to configure base Wasm plugin: trap in proxy_on_configure")
	}
	if v.fn.configure.fn != nil && uint32(r) == 0 {
		return nil, errors.New("Failed to configure base Wasm plugin: proxy_on_configure returned false")
	}
	v.runActions()
	return root, nil
}

// finishRoot runs on_done then on_delete for a root context. When on_done returns false Envoy waits
// for proxy_done; we call on_delete right away (the filter's deferred work cannot outlive Close).
func (v *vm) finishRoot(root *pctx) {
	if root.deleted {
		return
	}
	root.deleted = true
	v.call(root, v.fn.done, uint64(root.id))
	v.call(root, v.fn.delete, uint64(root.id))
	delete(v.contexts, root.id)
	v.runActions()
}

func (v *vm) rootsSnapshot() []*pctx {
	var out []*pctx
	for _, c := range v.contexts {
		if c.root == nil && !c.deleted {
			out = append(out, c)
		}
	}
	return out
}

// --- guest memory helpers ---

func (v *vm) read(ptr, size uint32) ([]byte, bool) {
	if size == 0 {
		return nil, true
	}
	return v.mem.Read(ptr, size)
}

func (v *vm) readString(ptr, size uint32) (string, bool) {
	b, ok := v.read(ptr, size)
	return string(b), ok
}

func (v *vm) putU32(ptr, val uint32) bool { return v.mem.WriteUint32Le(ptr, val) }

func (v *vm) putU64(ptr uint32, val uint64) bool { return v.mem.WriteUint64Le(ptr, val) }

// alloc gets guest memory through malloc or proxy_on_memory_allocate, under the allocator's
// restricted list. Afterwards no list applies, whatever applied before: cpp-host's allocMemory
// ends with setRestrictedCallback(false), so an allocation during _initialize lifts the
// start-up list for the rest of it.
func (v *vm) alloc(size uint32) (uint32, bool) {
	f := v.fn.malloc
	if f.fn == nil {
		f = v.fn.memAlloc
	}
	if f.fn == nil {
		return 0, false
	}
	v.restricted = restrictAlloc
	v.aStack[0] = uint64(size)
	err := f.fn.CallWithStack(v.ctx, v.aStack[:])
	v.restricted = restrictNone
	if err != nil {
		v.trap(err)
		return 0, false
	}
	return uint32(v.aStack[0]), v.aStack[0] != 0
}

// copyOut allocates guest memory for data and stores its address and size at ptrPtr/sizePtr.
func (v *vm) copyOut(data []byte, ptrPtr, sizePtr uint32) uint32 {
	if len(data) == 0 {
		if !v.putU32(ptrPtr, 0) || !v.putU32(sizePtr, 0) {
			return statusInvalidMemoryAccess
		}
		return statusOK
	}
	p, ok := v.alloc(uint32(len(data)))
	if !ok {
		return statusInvalidMemoryAccess
	}
	if !v.mem.Write(p, data) || !v.putU32(ptrPtr, p) || !v.putU32(sizePtr, uint32(len(data))) {
		return statusInvalidMemoryAccess
	}
	return statusOK
}

func u64le(n uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, n)
	return b
}
