package abi

// Test access to the callback side of the binding, driven natively.

// UseHost installs h as the host and forgets every context and the factory.
func UseHost(h Host) {
	host, factory = h, nil
	roots = map[uint32]RootContext{}
	streams = map[uint32]HTTPContext{}
}

var (
	OnContextCreate    = onContextCreate
	OnVMStart          = onVMStart
	OnConfigure        = onConfigure
	OnTick             = onTick
	OnHTTPCallResponse = onHTTPCallResponse
	OnRequestHeaders   = onRequestHeaders
	OnRequestBody      = onRequestBody
	OnResponseHeaders  = onResponseHeaders
	OnResponseBody     = onResponseBody
	OnLog              = onLog
	OnDone             = onDone
	OnDelete           = onDelete
)

// Contexts reports how many root and stream contexts are registered.
func Contexts() (nroots, nstreams int) { return len(roots), len(streams) }
