package abitest

import (
	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// AllowClusters limits HTTPCall to these clusters (Envoy: an unknown
// cluster is StatusBadArgument). Without it every cluster is accepted.
func (f *Fake) AllowClusters(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters = map[string]bool{}
	for _, n := range names {
		f.clusters[n] = true
	}
}

// HTTPCall implements abi.Host with Envoy's argument checks (known cluster,
// :method, :path and :authority present) and records the call.
func (f *Fake) HTTPCall(cluster string, headers [][2]string, body []byte, timeoutMs uint32) (uint32, abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("HTTPCall"); ok {
		return 0, st
	}
	if f.clusters != nil && !f.clusters[cluster] {
		return 0, abi.StatusBadArgument
	}
	need := map[string]bool{":method": true, ":path": true, ":authority": true}
	for _, h := range headers {
		delete(need, h[0])
	}
	if len(need) > 0 {
		return 0, abi.StatusBadArgument
	}
	f.lastToken++
	f.calls = append(f.calls, HTTPCall{
		Token: f.lastToken, Cluster: cluster, TimeoutMs: timeoutMs,
		Headers: append([][2]string(nil), headers...), Body: append([]byte(nil), body...),
	})
	return f.lastToken, abi.StatusOK
}

// HTTPCalls returns every accepted callout so far.
func (f *Fake) HTTPCalls() []HTTPCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]HTTPCall(nil), f.calls...)
}

// RespondHTTPCall delivers a callout's answer to root as Envoy does: the
// response maps and body are readable during the callback only, and the
// root context is current.
func (f *Fake) RespondHTTPCall(root abi.RootContext, rootID, token uint32, headers [][2]string, body []byte, trailers [][2]string) {
	f.SetHeaders(abi.MapHTTPCallResponseHeaders, headers)
	f.SetHeaders(abi.MapHTTPCallResponseTrailers, trailers)
	f.SetBufferData(abi.BufferHTTPCallResponseBody, body)
	f.Enter(rootID)
	root.OnHTTPCallResponse(token, len(headers), len(body), len(trailers))
	f.DropHeaders(abi.MapHTTPCallResponseHeaders)
	f.DropHeaders(abi.MapHTTPCallResponseTrailers)
	f.DropBuffer(abi.BufferHTTPCallResponseBody)
}

// FailHTTPCall delivers a failed callout (reset, timeout, too large): Envoy
// calls back with no headers, body or trailers and GetStatus gives 11
// "reset" during the callback.
func (f *Fake) FailHTTPCall(root abi.RootContext, rootID, token uint32) {
	f.SetStatus(uint32(abi.StatusBrokenConnection), "reset")
	f.Enter(rootID)
	root.OnHTTPCallResponse(token, 0, 0, 0)
	f.SetStatus(0, "")
}
