package host

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// memCache is shared by every Host in the process so that creating a second Host (or a reload that
// needs a fresh VM) for the same module never compiles it again; wazero keys entries by module hash.
var memCache = wazero.NewCompilationCache()

var (
	dirCachesMu sync.Mutex
	dirCaches   = map[string]wazero.CompilationCache{}
)

// Host runs one proxy-wasm plugin the way Envoy does: a canary VM per plugin config, one VM per
// worker, each entry into a VM serialized by that worker's mutex.
type Host struct {
	// open counts streams created and not yet Done.
	open atomic.Int64

	opts     Options
	rt       wazero.Runtime
	compiled wazero.CompiledModule
	abi      string
	now      func() time.Time
	mono     time.Time
	shared   *sharedData
	metrics  *metricStore
	tags     []tagRule
	client   *http.Client
	// env is the VM's environment as "NAME=VALUE", sorted (Options.Env).
	env []string

	logMu sync.Mutex
	logs  []LogEntry
	traps []string

	pollCalls atomic.Int64
	// hostCalls counts the guest's calls into each host function by name
	// ("env.proxy_get_header_map_value"); the map is filled before any VM runs.
	hostCalls map[string]*atomic.Int64

	workers []*worker
	rr      atomic.Uint32

	cfgMu        sync.Mutex
	pluginConfig []byte
	closed       bool

	callCtx    context.Context
	cancelCall context.CancelFunc
	calls      sync.WaitGroup

	tickerMu   sync.Mutex
	tickerStop chan struct{}
	tickerDone chan struct{}
}

// worker is one Envoy worker thread: a VM, its current root context and the mutex every entry into
// that VM takes.
type worker struct {
	h    *Host
	idx  int
	mu   sync.Mutex
	vm   *vm
	root *pctx
}

var abiMarkers = []struct{ export, version string }{
	{"proxy_abi_version_0_2_1", "0.2.1"},
	{"proxy_abi_version_0_2_0", "0.2.0"},
	{"proxy_abi_version_0_1_0", "0.1.0"},
}

// New compiles the module, validates the plugin config on a canary VM and starts one VM with a
// configured root context per worker. A config the plugin rejects is an error, as in Envoy.
func New(ctx context.Context, o Options) (*Host, error) {
	if len(o.Module) == 0 {
		return nil, errors.New("envoy/host: Options.Module is empty")
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	if o.BufferLimit <= 0 {
		o.BufferLimit = 1 << 20
	}
	if o.MaxLogs <= 0 {
		o.MaxLogs = 10000
	}
	if o.VMID == "" && o.RootID != "" {
		// Envoy keys shared data by vm_id; an empty vm_id is a valid (shared) key too.
		o.VMID = ""
	}
	h := &Host{opts: o, now: o.Now, mono: time.Now(), metrics: newMetricStore()}
	if h.now == nil {
		h.now = time.Now
	}
	tags, err := compileTags(o.StatsTags)
	if err != nil {
		return nil, err
	}
	h.tags = tags
	for k, v := range o.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(v, "\x00") {
			return nil, errors.New("envoy/host: Options.Env: " + strconv.Quote(k) + " is not a NAME=VALUE environment variable")
		}
		h.env = append(h.env, k+"="+v)
	}
	sort.Strings(h.env)
	cache := memCache
	if o.CacheDir != "" {
		dirCachesMu.Lock()
		c, ok := dirCaches[o.CacheDir]
		if !ok {
			c, err = wazero.NewCompilationCacheWithDir(o.CacheDir)
			if err != nil {
				dirCachesMu.Unlock()
				return nil, errors.New("envoy/host: compilation cache dir " + o.CacheDir + ": " + err.Error())
			}
			dirCaches[o.CacheDir] = c
		}
		dirCachesMu.Unlock()
		cache = c
	}
	h.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	fail := func(err error) (*Host, error) {
		_ = h.rt.Close(ctx)
		return nil, err
	}
	h.compiled, err = h.rt.CompileModule(ctx, o.Module)
	if err != nil {
		return fail(errors.New("envoy/host: compile module: " + err.Error()))
	}
	exports := h.compiled.ExportedFunctions()
	for _, m := range abiMarkers {
		// Envoy takes the first marker in export order; a module exports one in practice, so we
		// prefer the newest when several are present.
		if _, ok := exports[m.export]; ok {
			h.abi = m.version
			break
		}
	}
	if h.abi == "" {
		return fail(errors.New("envoy/host: wasm missing proxy_abi_version_* export (unsupported ABI version)"))
	}
	_, hasMalloc := exports["malloc"]
	_, hasAlloc := exports["proxy_on_memory_allocate"]
	if !hasMalloc && !hasAlloc {
		return fail(errors.New("envoy/host: wasm exports neither malloc nor proxy_on_memory_allocate"))
	}
	fns := append(hostFunctions(h.abi, o.Profile), o.extraHostFns...)
	if err := checkImports(h.compiled, fns); err != nil {
		return fail(err)
	}
	if err := h.instantiateHostModules(ctx, fns); err != nil {
		return fail(err)
	}
	h.shared = acquireShared(o.VMID)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableCompression = true
	h.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // Envoy's async client does not follow redirects
	}}
	h.callCtx, h.cancelCall = context.WithCancel(context.Background())
	h.pluginConfig = append([]byte(nil), o.PluginConfig...)

	if err := h.canary(ctx, h.pluginConfig); err != nil {
		h.shutdownResources(ctx)
		return nil, err
	}
	for i := 0; i < o.Workers; i++ {
		w := &worker{h: h, idx: i}
		if err := w.start(ctx); err != nil {
			h.shutdownResources(ctx)
			return nil, err
		}
		h.workers = append(h.workers, w)
	}
	return h, nil
}

// start builds the worker's VM and its root context for the current plugin config.
func (w *worker) start(ctx context.Context) error {
	v, err := w.h.newVM(ctx, w.idx)
	if err != nil {
		return err
	}
	root, err := v.startRoot(w.h.currentConfig())
	if err != nil {
		v.close(ctx)
		return errors.New("envoy/host: worker " + itoa(int64(w.idx)) + ": " + err.Error())
	}
	w.vm, w.root = v, root
	return nil
}

func (h *Host) currentConfig() []byte {
	h.cfgMu.Lock()
	defer h.cfgMu.Unlock()
	return h.pluginConfig
}

// canary validates a plugin config on a throwaway VM, as Envoy does before any worker sees it.
// The canary gets no on_done/on_delete.
func (h *Host) canary(ctx context.Context, cfg []byte) error {
	v, err := h.newVM(ctx, -1)
	if err != nil {
		return errors.New("envoy/host: canary: " + err.Error())
	}
	defer v.close(ctx)
	if _, err := v.startRoot(cfg); err != nil {
		return errors.New("envoy/host: canary: " + err.Error())
	}
	return nil
}

// Reload applies a new plugin config the way Envoy does when only the configuration changes: a
// canary validates it, then every worker keeps its VM and gets a new root context. The old root
// gets on_done/on_delete once its last stream is done.
func (h *Host) Reload(ctx context.Context, pluginConfig []byte) error {
	cfg := append([]byte(nil), pluginConfig...)
	if err := h.canary(ctx, cfg); err != nil {
		return err
	}
	h.cfgMu.Lock()
	if h.closed {
		h.cfgMu.Unlock()
		return errors.New("envoy/host: reload after Close")
	}
	h.pluginConfig = cfg
	h.cfgMu.Unlock()
	var errs []string
	for _, w := range h.workers {
		w.mu.Lock()
		if w.vm == nil || w.vm.failed {
			w.mu.Unlock()
			continue // a failed VM is rebuilt (FAIL_RELOAD) with the current config
		}
		old := w.root
		root, err := w.vm.startRoot(cfg)
		if err != nil {
			errs = append(errs, "worker "+itoa(int64(w.idx))+": "+err.Error())
			w.mu.Unlock()
			continue
		}
		w.root = root
		old.retired = true
		if old.liveStreams == 0 {
			w.vm.finishRoot(old)
		}
		w.mu.Unlock()
	}
	if len(errs) > 0 {
		return errors.New("envoy/host: reload: " + strings.Join(errs, "; "))
	}
	return nil
}

// Close shuts the plugin down: pending callouts are cancelled, every root context gets
// on_done/on_delete, and the VMs are released.
func (h *Host) Close(ctx context.Context) error {
	h.cfgMu.Lock()
	if h.closed {
		h.cfgMu.Unlock()
		return nil
	}
	h.closed = true
	h.cfgMu.Unlock()
	h.StopTicker()
	h.cancelCall()
	h.calls.Wait()
	for _, w := range h.workers {
		w.mu.Lock()
		if w.vm != nil && !w.vm.failed {
			for _, c := range w.vm.rootsSnapshot() {
				w.vm.finishRoot(c)
			}
		}
		w.mu.Unlock()
	}
	h.shutdownResources(ctx)
	return nil
}

func (h *Host) shutdownResources(ctx context.Context) {
	for _, w := range h.workers {
		w.mu.Lock()
		if w.vm != nil {
			w.vm.close(ctx)
		}
		w.mu.Unlock()
	}
	if h.shared != nil {
		releaseShared(h.opts.VMID)
		h.shared = nil
	}
	if h.cancelCall != nil {
		h.cancelCall()
	}
	_ = h.rt.Close(ctx)
}

// ABIVersion reports the proxy-wasm ABI marker the module exports ("0.2.1", "0.2.0", "0.1.0").
func (h *Host) ABIVersion() string { return h.abi }

// Workers reports the number of worker VMs.
func (h *Host) Workers() int { return len(h.workers) }

// PollOneoffCalls counts WASI poll_oneoff calls: on the legacy profile each one is an ENOSYS that
// kills a Go module blocked in the scheduler, so tests assert it stays zero.
func (h *Host) PollOneoffCalls() int { return int(h.pollCalls.Load()) }

// Logs returns a copy of the captured guest log lines (oldest first).
func (h *Host) Logs() []LogEntry {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return append([]LogEntry(nil), h.logs...)
}

// Traps returns every guest trap seen so far; a trap is never swallowed.
func (h *Host) Traps() []string {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return append([]string(nil), h.traps...)
}

func (h *Host) addLog(worker int, l Level, msg string) {
	if l < h.opts.LogLevel {
		return
	}
	h.logMu.Lock()
	if len(h.logs) >= h.opts.MaxLogs {
		copy(h.logs, h.logs[1:])
		h.logs = h.logs[:len(h.logs)-1]
	}
	h.logs = append(h.logs, LogEntry{Level: l, Message: msg, Worker: worker})
	h.logMu.Unlock()
	if h.opts.Log != nil {
		h.opts.Log(l, msg)
	}
}

func (h *Host) addTrap(worker int, msg string) {
	h.logMu.Lock()
	h.traps = append(h.traps, msg)
	h.logMu.Unlock()
	h.addLog(worker, LevelCritical, "wasm trap: "+msg)
}

// pickWorker returns the worker for a stream: explicit index or round robin.
func (h *Host) pickWorker(i int) *worker {
	if i >= 0 && i < len(h.workers) {
		return h.workers[i]
	}
	n := h.rr.Add(1) - 1
	return h.workers[int(n)%len(h.workers)]
}

// checkImports fails like cpp-host's link step: an import the profile does not offer is a
// "missing import", one it offers with another signature an "import type mismatch".
func checkImports(cm wazero.CompiledModule, fns []hostFn) error {
	have := make(map[string]*hostFn, len(fns))
	for i := range fns {
		have[fns[i].module+"."+fns[i].name] = &fns[i]
	}
	var missing, mismatched []string
	for _, def := range cm.ImportedFunctions() {
		mod, name, _ := def.Import()
		f, ok := have[mod+"."+name]
		if !ok {
			missing = append(missing, mod+"."+name)
			continue
		}
		if !sameTypes(def.ParamTypes(), f.params) || !sameTypes(def.ResultTypes(), f.results) {
			mismatched = append(mismatched, mod+"."+name)
		}
	}
	for _, def := range cm.ImportedMemories() {
		mod, name, _ := def.Import()
		missing = append(missing, mod+"."+name+" (memory)")
	}
	if len(missing) > 0 {
		return errors.New("envoy/host: Failed to load Wasm module due to a missing import: " + strings.Join(missing, ", "))
	}
	if len(mismatched) > 0 {
		return errors.New("envoy/host: Failed to load Wasm module due to an import type mismatch: " + strings.Join(mismatched, ", "))
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (h *Host) instantiateHostModules(ctx context.Context, fns []hostFn) error {
	builders := map[string]wazero.HostModuleBuilder{}
	var order []string
	for i := range fns {
		f := fns[i]
		b, ok := builders[f.module]
		if !ok {
			b = h.rt.NewHostModuleBuilder(f.module)
			builders[f.module] = b
			order = append(order, f.module)
		}
		b.NewFunctionBuilder().WithGoModuleFunction(h.wrap(f), f.params, f.results).Export(f.name)
	}
	for _, m := range order {
		if _, err := builders[m].Instantiate(ctx); err != nil {
			return errors.New("envoy/host: host module " + m + ": " + err.Error())
		}
	}
	return nil
}

type vmKey struct{}

// wrap turns a host function into a wazero function that finds its VM through the call context
// and enforces Envoy's restricted-callback lists.
func (h *Host) wrap(f hostFn) api.GoModuleFunc {
	fn := f.fn
	name := f.module + "." + f.name
	okInit, okAlloc := f.initOK, f.allocOK
	if h.hostCalls == nil {
		h.hostCalls = map[string]*atomic.Int64{}
	}
	n := new(atomic.Int64)
	h.hostCalls[name] = n
	if h.opts.AllowStdioInit && f.module != "env" && (f.name == "fd_fdstat_get" || f.name == "fd_fdstat_set_flags") {
		okInit = true
	}
	return func(ctx context.Context, m api.Module, stack []uint64) {
		v, _ := ctx.Value(vmKey{}).(*vm)
		if v == nil {
			panic(errors.New("host call " + name + " outside a known VM"))
		}
		switch v.restricted {
		case restrictInit:
			if !okInit {
				panic(errors.New("restricted_callback: " + name + " is not allowed during _initialize"))
			}
		case restrictAlloc:
			if !okAlloc {
				panic(errors.New("restricted_callback: " + name + " is not allowed during memory allocation"))
			}
		}
		n.Add(1)
		fn(v, stack)
	}
}

// HostCalls reports how many times the guests called each host function so
// far, by "module.name", leaving out functions never called.
func (h *Host) HostCalls() map[string]int64 {
	out := map[string]int64{}
	for name, n := range h.hostCalls {
		if c := n.Load(); c > 0 {
			out[name] = c
		}
	}
	return out
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
