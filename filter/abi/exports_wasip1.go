//go:build wasip1

package abi

// The proxy-wasm v0.2.1 callbacks. Each converts the wasm integers and hands
// over to dispatch.go.

//go:wasmexport proxy_abi_version_0_2_1
func proxyABIVersion021() {}

//go:wasmexport proxy_on_context_create
func proxyOnContextCreate(id, parent uint32) { onContextCreate(id, parent) }

//go:wasmexport proxy_on_vm_start
func proxyOnVMStart(id, size uint32) uint32 { return b2u(onVMStart(id, int(size))) }

//go:wasmexport proxy_on_configure
func proxyOnConfigure(id, size uint32) uint32 { return b2u(onConfigure(id, int(size))) }

//go:wasmexport proxy_on_tick
func proxyOnTick(id uint32) { onTick(id) }

//go:wasmexport proxy_on_http_call_response
func proxyOnHTTPCallResponse(id, token, numHeaders, bodySize, numTrailers uint32) {
	onHTTPCallResponse(id, token, int(numHeaders), int(bodySize), int(numTrailers))
}

//go:wasmexport proxy_on_request_headers
func proxyOnRequestHeaders(id, n, end uint32) uint32 {
	return uint32(onRequestHeaders(id, int(n), end != 0))
}

//go:wasmexport proxy_on_request_body
func proxyOnRequestBody(id, size, end uint32) uint32 {
	return uint32(onRequestBody(id, int(size), end != 0))
}

//go:wasmexport proxy_on_request_trailers
func proxyOnRequestTrailers(id, n uint32) uint32 { return uint32(onRequestTrailers(id, int(n))) }

//go:wasmexport proxy_on_response_headers
func proxyOnResponseHeaders(id, n, end uint32) uint32 {
	return uint32(onResponseHeaders(id, int(n), end != 0))
}

//go:wasmexport proxy_on_response_body
func proxyOnResponseBody(id, size, end uint32) uint32 {
	return uint32(onResponseBody(id, int(size), end != 0))
}

//go:wasmexport proxy_on_response_trailers
func proxyOnResponseTrailers(id, n uint32) uint32 { return uint32(onResponseTrailers(id, int(n))) }

//go:wasmexport proxy_on_log
func proxyOnLog(id uint32) { onLog(id) }

//go:wasmexport proxy_on_done
func proxyOnDone(id uint32) uint32 { return b2u(onDone(id)) }

//go:wasmexport proxy_on_delete
func proxyOnDelete(id uint32) { onDelete(id) }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
