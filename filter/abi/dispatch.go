package abi

import (
	"strconv"

	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"
)

// The context registry and the Go side of every callback. The exported wasm
// functions (exports_wasip1.go) only convert types and call these, so the
// routing, the unknown-context defaults and panic containment are testable
// natively. Callbacks reach the plugin through the SDK's context interfaces,
// as the SDK's own binding delivers them, plus the three Envoy callbacks
// those leave out (HTTPCallResponder, StreamDoner, Deleter).

// The binding's state is the package's: a module instance is one VM, and
// its exported callbacks are package functions with nowhere else to find
// it. So the VM context, its host and the context registry are package
// variables here, one set per module instance (natively, per test that
// calls UseHost), while the filter's own state lives on its VM context
// (core.VM), never in a package.
var (
	host    Host
	vm      types.VMContext
	roots   = newRegistry[rootEntry]()
	streams = newRegistry[Stream]()
)

// rootEntry is a registered plugin context, with its StreamMaker side
// when it has one.
type rootEntry struct {
	ctx   types.PluginContext
	maker StreamMaker
}

// sdkStream is a stream of a root that is no StreamMaker: it is asked for
// StreamDoner and Deleter when those callbacks come.
type sdkStream struct{ types.HttpContext }

func (s sdkStream) OnDone() {
	if d, wants := s.HttpContext.(StreamDoner); wants {
		d.OnDone()
	}
}

func (s sdkStream) OnDelete() {
	if d, wants := s.HttpContext.(Deleter); wants {
		d.OnDelete()
	}
}

// SetVMContext registers the plugin's VM context, the SDK's entry point.
// Call it from an init function: a reactor's main never runs, and the host
// creates the first root context right after _initialize. The VM context
// makes its host calls through CurrentHost.
func SetVMContext(ctx types.VMContext) { vm = ctx }

// CurrentHost is the host the binding calls: the proxy-wasm imports in the
// wasm build, nil natively until a test installs one.
func CurrentHost() Host { return host }

// passStream stands in for a stream whose root declined it (or that belongs
// to no known root): it continues everything, without a log line per call.
type passStream struct{ types.DefaultHttpContext }

func (*passStream) OnDone()   {}
func (*passStream) OnDelete() {}

func logf(level LogLevel, what string, id uint32) {
	if host != nil {
		host.Log(level, "tokenbudget abi: "+what+" (context "+strconv.FormatUint(uint64(id), 10)+")")
	}
}

// contain turns a panic in plugin code into an error log, so one bad
// request does not trap the VM (which Envoy then fails for every later
// request). The callback returns its safe default.
func contain(where string, id uint32) {
	if p := recover(); p != nil {
		msg := "non-error panic value"
		switch v := p.(type) {
		case error:
			msg = v.Error()
		case string:
			msg = v
		}
		logf(LogCritical, "panic in "+where+": "+msg, id)
	}
}

func onContextCreate(id, parent uint32) {
	defer contain("proxy_on_context_create", id)
	if parent == 0 {
		if vm == nil {
			logf(LogError, "no VM context registered", id)
			return
		}
		r := vm.NewPluginContext(id)
		if r == nil {
			logf(LogError, "the VM context made no plugin context", id)
			return
		}
		maker, _ := r.(StreamMaker)
		roots.put(id, rootEntry{r, maker})
		return
	}
	r, ok := roots.get(parent)
	if !ok {
		logf(LogWarn, "stream of unknown root "+strconv.FormatUint(uint64(parent), 10)+" passes through", id)
		streams.put(id, &passStream{})
		return
	}
	if r.maker != nil {
		if s := r.maker.NewStream(id); s != nil {
			streams.put(id, s)
			return
		}
	} else if s := r.ctx.NewHttpContext(id); s != nil {
		streams.put(id, sdkStream{s})
		return
	}
	streams.put(id, &passStream{})
}

// Configuration reads a configuration buffer the host announced with its
// size, as a VM or plugin context does in OnVMStart or OnPluginStart; size
// 0 is an empty configuration. The error wraps the SDK's status error.
func Configuration(h Host, b BufferType, size int) ([]byte, error) {
	if size <= 0 {
		return nil, nil
	}
	data, st := h.GetBuffer(b, 0, size)
	if st != StatusOK {
		return nil, configError{st.Err()}
	}
	return data, nil
}

type configError struct{ err error }

func (e configError) Error() string { return "reading configuration buffer: " + e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// onVMStart and onConfigure report false (reject) on a panic: the named
// result is only set by a completed return.
func onVMStart(id uint32, size int) (ok bool) {
	defer contain("proxy_on_vm_start", id)
	if _, found := roots.get(id); !found {
		logf(LogError, "vm start for unknown root context", id)
		return false
	}
	return vm.OnVMStart(size) == types.OnVMStartStatusOK
}

func onConfigure(id uint32, size int) (ok bool) {
	defer contain("proxy_on_configure", id)
	r, found := roots.get(id)
	if !found {
		logf(LogError, "configure for unknown root context", id)
		return false
	}
	return r.ctx.OnPluginStart(size) == types.OnPluginStartStatusOK
}

func onTick(id uint32) {
	defer contain("proxy_on_tick", id)
	if r, ok := roots.get(id); ok {
		r.ctx.OnTick()
		return
	}
	logf(LogWarn, "tick for unknown root context", id)
}

func onHTTPCallResponse(id, token uint32, numHeaders, bodySize, numTrailers int) {
	defer contain("proxy_on_http_call_response", id)
	r, ok := roots.get(id)
	if !ok {
		logf(LogWarn, "callout response for unknown root context", id)
		return
	}
	if cr, takes := r.ctx.(HTTPCallResponder); takes {
		cr.OnHTTPCallResponse(token, numHeaders, bodySize, numTrailers)
		return
	}
	logf(LogWarn, "callout response for a root context that makes no callouts", id)
}

// stream finds a stream context; unknown ids are logged and continue.
func stream(id uint32, where string) Stream {
	if s, ok := streams.get(id); ok {
		return s
	}
	logf(LogWarn, where+" for unknown stream context", id)
	return &passStream{}
}

func onRequestHeaders(id uint32, n int, end bool) Action {
	defer contain("proxy_on_request_headers", id)
	return stream(id, "request headers").OnHttpRequestHeaders(n, end)
}

func onRequestBody(id uint32, size int, end bool) Action {
	defer contain("proxy_on_request_body", id)
	return stream(id, "request body").OnHttpRequestBody(size, end)
}

func onRequestTrailers(id uint32, n int) Action {
	defer contain("proxy_on_request_trailers", id)
	return stream(id, "request trailers").OnHttpRequestTrailers(n)
}

func onResponseHeaders(id uint32, n int, end bool) Action {
	defer contain("proxy_on_response_headers", id)
	return stream(id, "response headers").OnHttpResponseHeaders(n, end)
}

func onResponseBody(id uint32, size int, end bool) Action {
	defer contain("proxy_on_response_body", id)
	return stream(id, "response body").OnHttpResponseBody(size, end)
}

func onResponseTrailers(id uint32, n int) Action {
	defer contain("proxy_on_response_trailers", id)
	return stream(id, "response trailers").OnHttpResponseTrailers(n)
}

// onLog is the SDK's OnHttpStreamDone.
func onLog(id uint32) {
	defer contain("proxy_on_log", id)
	if s, ok := streams.get(id); ok {
		s.OnHttpStreamDone()
	}
}

// onDone reports whether the context is done; only a root may say no.
func onDone(id uint32) (done bool) {
	done = true
	defer contain("proxy_on_done", id)
	if s, ok := streams.get(id); ok {
		s.OnDone()
		return true
	}
	if r, ok := roots.get(id); ok {
		return r.ctx.OnPluginDone()
	}
	logf(LogWarn, "done for unknown context", id)
	return true
}

func onDelete(id uint32) {
	defer contain("proxy_on_delete", id)
	if s, ok := streams.get(id); ok {
		streams.remove(id)
		s.OnDelete()
		return
	}
	if r, ok := roots.get(id); ok {
		roots.remove(id)
		if d, wants := r.ctx.(Deleter); wants {
			d.OnDelete()
		}
		return
	}
	logf(LogWarn, "delete of unknown context", id)
}
