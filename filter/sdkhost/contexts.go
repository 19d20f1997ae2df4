//go:build !wasip1

package sdkhost

import (
	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// Contexts wraps a VM context for the SDK's own dispatcher (proxytest's
// WithVMContext, or proxywasm.SetVMContext) so the contexts get what Envoy
// gives them and the SDK's dispatcher does not:
//   - proxy_on_done and proxy_on_delete of an HTTP context (abi.StreamDoner,
//     abi.Deleter), right after OnHttpStreamDone as Envoy calls them;
//   - callouts that belong to the root context: the SDK delivers an answer
//     only while the context that made the call exists, Envoy delivers it to
//     the root whatever became of the stream. The binding makes every call
//     from the root (it knows which context is running from the wrapper).
//
// Use the same Host for the contexts and the wrapper.
func (h *Host) Contexts(vm types.VMContext) types.VMContext { return &vmContext{h: h, vm: vm} }

type vmContext struct {
	h  *Host
	vm types.VMContext
}

func (v *vmContext) OnVMStart(size int) types.OnVMStartStatus { return v.vm.OnVMStart(size) }

func (v *vmContext) NewPluginContext(id uint32) types.PluginContext {
	p := v.vm.NewPluginContext(id)
	if p == nil {
		return nil
	}
	return &pluginContext{h: v.h, id: id, p: p}
}

type pluginContext struct {
	h  *Host
	id uint32
	p  types.PluginContext
}

func (c *pluginContext) enter() { c.h.current, c.h.root = c.id, c.id }

func (c *pluginContext) OnPluginStart(size int) types.OnPluginStartStatus {
	c.enter()
	return c.p.OnPluginStart(size)
}

func (c *pluginContext) OnPluginDone() bool    { c.enter(); return c.p.OnPluginDone() }
func (c *pluginContext) OnQueueReady(q uint32) { c.enter(); c.p.OnQueueReady(q) }
func (c *pluginContext) OnTick()               { c.enter(); c.p.OnTick() }

func (c *pluginContext) NewTcpContext(id uint32) types.TcpContext { return nil }

func (c *pluginContext) NewHttpContext(id uint32) types.HttpContext {
	c.enter()
	s := c.p.NewHttpContext(id)
	if s == nil {
		return nil
	}
	return &httpContext{h: c.h, id: id, root: c.id, s: s}
}

type httpContext struct {
	h        *Host
	id, root uint32
	s        types.HttpContext
}

func (c *httpContext) enter() { c.h.current, c.h.root = c.id, c.root }

func (c *httpContext) OnHttpRequestHeaders(n int, end bool) types.Action {
	c.enter()
	return c.s.OnHttpRequestHeaders(n, end)
}

func (c *httpContext) OnHttpRequestBody(n int, end bool) types.Action {
	c.enter()
	return c.s.OnHttpRequestBody(n, end)
}

func (c *httpContext) OnHttpRequestTrailers(n int) types.Action {
	c.enter()
	return c.s.OnHttpRequestTrailers(n)
}

func (c *httpContext) OnHttpResponseHeaders(n int, end bool) types.Action {
	c.enter()
	return c.s.OnHttpResponseHeaders(n, end)
}

func (c *httpContext) OnHttpResponseBody(n int, end bool) types.Action {
	c.enter()
	return c.s.OnHttpResponseBody(n, end)
}

func (c *httpContext) OnHttpResponseTrailers(n int) types.Action {
	c.enter()
	return c.s.OnHttpResponseTrailers(n)
}

// OnHttpStreamDone is proxy_on_log; the SDK's dispatcher forgets the
// context next, so proxy_on_done and proxy_on_delete follow here.
func (c *httpContext) OnHttpStreamDone() {
	c.enter()
	c.s.OnHttpStreamDone()
	if d, ok := c.s.(abi.StreamDoner); ok {
		d.OnDone()
	}
	if d, ok := c.s.(abi.Deleter); ok {
		d.OnDelete()
	}
}
