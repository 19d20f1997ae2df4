package abi

import "strconv"

// The context registry and the Go side of every callback. The exported wasm
// functions (exports_wasip1.go) only convert types and call these, so the
// routing, the unknown-context defaults and panic containment are testable
// natively.

var (
	host    Host
	factory func(contextID uint32, h Host) RootContext
	roots   = map[uint32]RootContext{}
	streams = map[uint32]HTTPContext{}
)

// SetRootContextFactory registers the plugin. Call it from an init function:
// a reactor's main never runs, and the host creates the first root context
// right after _initialize.
func SetRootContextFactory(f func(contextID uint32, h Host) RootContext) {
	factory = f
}

// passStream stands in for a stream whose root declined it (or that belongs
// to no known root): it continues everything, without a log line per call.
type passStream struct{}

func (passStream) OnRequestHeaders(int, bool) Action  { return ActionContinue }
func (passStream) OnRequestBody(int, bool) Action     { return ActionContinue }
func (passStream) OnRequestTrailers(int) Action       { return ActionContinue }
func (passStream) OnResponseHeaders(int, bool) Action { return ActionContinue }
func (passStream) OnResponseBody(int, bool) Action    { return ActionContinue }
func (passStream) OnResponseTrailers(int) Action      { return ActionContinue }
func (passStream) OnLog()                             {}
func (passStream) OnDone()                            {}
func (passStream) OnDelete()                          {}

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
		if factory == nil {
			logf(LogError, "no root context factory registered", id)
			return
		}
		r := factory(id, host)
		if r == nil {
			logf(LogError, "root context factory returned nil", id)
			return
		}
		roots[id] = r
		return
	}
	r, ok := roots[parent]
	if !ok {
		logf(LogWarn, "stream of unknown root "+strconv.FormatUint(uint64(parent), 10)+" passes through", id)
		streams[id] = passStream{}
		return
	}
	s := r.NewHTTPContext(id)
	if s == nil {
		s = passStream{}
	}
	streams[id] = s
}

// readConfig fetches a configuration buffer announced with its size.
func readConfig(b BufferType, size int, id uint32) ([]byte, bool) {
	if size <= 0 {
		return nil, true
	}
	data, st := host.GetBuffer(b, 0, size)
	if st != StatusOK {
		logf(LogError, "reading configuration buffer: "+st.String(), id)
		return nil, false
	}
	return data, true
}

// onVMStart and onConfigure report false (reject) on a panic: the named
// result is only set by a completed return.
func onVMStart(id uint32, size int) (ok bool) {
	defer contain("proxy_on_vm_start", id)
	r, found := roots[id]
	if !found {
		logf(LogError, "vm start for unknown root context", id)
		return false
	}
	cfg, read := readConfig(BufferVMConfiguration, size, id)
	return read && r.OnVMStart(cfg)
}

func onConfigure(id uint32, size int) (ok bool) {
	defer contain("proxy_on_configure", id)
	r, found := roots[id]
	if !found {
		logf(LogError, "configure for unknown root context", id)
		return false
	}
	cfg, read := readConfig(BufferPluginConfiguration, size, id)
	return read && r.OnConfigure(cfg)
}

func onTick(id uint32) {
	defer contain("proxy_on_tick", id)
	if r, ok := roots[id]; ok {
		r.OnTick()
		return
	}
	logf(LogWarn, "tick for unknown root context", id)
}

func onHTTPCallResponse(id, token uint32, numHeaders, bodySize, numTrailers int) {
	defer contain("proxy_on_http_call_response", id)
	if r, ok := roots[id]; ok {
		r.OnHTTPCallResponse(token, numHeaders, bodySize, numTrailers)
		return
	}
	logf(LogWarn, "callout response for unknown root context", id)
}

// stream finds a stream context; unknown ids are logged and continue.
func stream(id uint32, where string) HTTPContext {
	if s, ok := streams[id]; ok {
		return s
	}
	logf(LogWarn, where+" for unknown stream context", id)
	return passStream{}
}

func onRequestHeaders(id uint32, n int, end bool) Action {
	defer contain("proxy_on_request_headers", id)
	return stream(id, "request headers").OnRequestHeaders(n, end)
}

func onRequestBody(id uint32, size int, end bool) Action {
	defer contain("proxy_on_request_body", id)
	return stream(id, "request body").OnRequestBody(size, end)
}

func onRequestTrailers(id uint32, n int) Action {
	defer contain("proxy_on_request_trailers", id)
	return stream(id, "request trailers").OnRequestTrailers(n)
}

func onResponseHeaders(id uint32, n int, end bool) Action {
	defer contain("proxy_on_response_headers", id)
	return stream(id, "response headers").OnResponseHeaders(n, end)
}

func onResponseBody(id uint32, size int, end bool) Action {
	defer contain("proxy_on_response_body", id)
	return stream(id, "response body").OnResponseBody(size, end)
}

func onResponseTrailers(id uint32, n int) Action {
	defer contain("proxy_on_response_trailers", id)
	return stream(id, "response trailers").OnResponseTrailers(n)
}

func onLog(id uint32) {
	defer contain("proxy_on_log", id)
	if s, ok := streams[id]; ok {
		s.OnLog()
	}
}

// onDone reports whether the context is done; only a root may say no.
func onDone(id uint32) (done bool) {
	done = true
	defer contain("proxy_on_done", id)
	if s, ok := streams[id]; ok {
		s.OnDone()
		return true
	}
	if r, ok := roots[id]; ok {
		return r.OnDone()
	}
	logf(LogWarn, "done for unknown context", id)
	return true
}

func onDelete(id uint32) {
	defer contain("proxy_on_delete", id)
	if s, ok := streams[id]; ok {
		delete(streams, id)
		s.OnDelete()
		return
	}
	if r, ok := roots[id]; ok {
		delete(roots, id)
		r.OnDelete()
		return
	}
	logf(LogWarn, "delete of unknown context", id)
}
