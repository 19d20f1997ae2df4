package abi

import "github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

// The adapter from RootContext and HTTPContext to the SDK's interfaces, so
// one dispatcher serves both callback surfaces. Each method forwards one
// callback; the configuration buffers are read here because the SDK's
// OnVMStart and OnPluginStart get only their sizes.

type legacyVM struct {
	factory func(contextID uint32, h Host) RootContext
}

// OnVMStart is never reached: every legacy root takes its own vm start
// (vmStarter), as RootContext.OnVMStart did.
func (legacyVM) OnVMStart(int) types.OnVMStartStatus { return types.OnVMStartStatusOK }

func (v legacyVM) NewPluginContext(id uint32) types.PluginContext {
	r := v.factory(id, host)
	if r == nil {
		return nil
	}
	return &legacyRoot{id: id, r: r}
}

type legacyRoot struct {
	types.DefaultPluginContext
	id uint32
	r  RootContext
}

// readConfig fetches a configuration buffer; a failure is logged and
// rejects the callback.
func (l *legacyRoot) readConfig(b BufferType, size int) ([]byte, bool) {
	data, err := Configuration(host, b, size)
	if err != nil {
		logf(LogError, err.Error(), l.id)
		return nil, false
	}
	return data, true
}

func (l *legacyRoot) onVMStart(size int) bool {
	cfg, ok := l.readConfig(BufferVMConfiguration, size)
	return ok && l.r.OnVMStart(cfg)
}

func (l *legacyRoot) OnPluginStart(size int) types.OnPluginStartStatus {
	cfg, ok := l.readConfig(BufferPluginConfiguration, size)
	return types.OnPluginStartStatus(ok && l.r.OnConfigure(cfg))
}

func (l *legacyRoot) OnTick()            { l.r.OnTick() }
func (l *legacyRoot) OnPluginDone() bool { return l.r.OnDone() }
func (l *legacyRoot) OnDelete()          { l.r.OnDelete() }

func (l *legacyRoot) OnHTTPCallResponse(token uint32, numHeaders, bodySize, numTrailers int) {
	l.r.OnHTTPCallResponse(token, numHeaders, bodySize, numTrailers)
}

func (l *legacyRoot) NewHttpContext(id uint32) types.HttpContext {
	s := l.r.NewHTTPContext(id)
	if s == nil {
		return nil
	}
	return legacyStream{s}
}

type legacyStream struct{ s HTTPContext }

func (l legacyStream) OnHttpRequestHeaders(n int, end bool) Action {
	return l.s.OnRequestHeaders(n, end)
}
func (l legacyStream) OnHttpRequestBody(n int, end bool) Action { return l.s.OnRequestBody(n, end) }
func (l legacyStream) OnHttpRequestTrailers(n int) Action       { return l.s.OnRequestTrailers(n) }
func (l legacyStream) OnHttpResponseHeaders(n int, end bool) Action {
	return l.s.OnResponseHeaders(n, end)
}
func (l legacyStream) OnHttpResponseBody(n int, end bool) Action { return l.s.OnResponseBody(n, end) }
func (l legacyStream) OnHttpResponseTrailers(n int) Action       { return l.s.OnResponseTrailers(n) }
func (l legacyStream) OnHttpStreamDone()                         { l.s.OnLog() }
func (l legacyStream) OnDone()                                   { l.s.OnDone() }
func (l legacyStream) OnDelete()                                 { l.s.OnDelete() }
