package abi

// Test access to the callback side of the binding, driven natively.

// UseHost installs h as the host and forgets every context and the
// factory or VM context.
func UseHost(h Host) {
	host, vm = h, nil
	roots = newRegistry[rootEntry]()
	streams = newRegistry[Stream]()
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
func Contexts() (nroots, nstreams int) { return roots.len(), streams.len() }
