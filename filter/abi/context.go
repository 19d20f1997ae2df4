package abi

import "github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

// Host is every host call the filter makes, in Go terms. The filter core
// depends on this interface only, so it runs natively (package
// filter/sdkhost, under the SDK's proxytest emulator) and in the wasm build
// alike. Calls act on the host's current context: the one whose callback
// is running, or the one chosen with SetEffectiveContext.
//
// Returned []byte and strings are owned by the caller.
type Host interface {
	// Log writes msg at level to the proxy's log.
	Log(level LogLevel, msg string)
	// GetProperty reads an attribute such as ("source", "address").
	GetProperty(path ...string) ([]byte, Status)
	// SetFilterState stores value under name on the current stream
	// (proxy_set_property): Envoy keeps it as filter state "wasm.<name>",
	// which an access log prints with %FILTER_STATE(wasm.<name>:PLAIN)%.
	SetFilterState(name string, value []byte) Status

	// GetHeader returns the first value of name in map m.
	GetHeader(m MapType, name string) (string, Status)
	AddHeader(m MapType, name, value string) Status
	ReplaceHeader(m MapType, name, value string) Status
	RemoveHeader(m MapType, name string) Status
	// GetHeaders returns every pair of map m in order.
	GetHeaders(m MapType) ([][2]string, Status)

	// GetBuffer reads up to maxSize bytes of buffer b from start.
	GetBuffer(b BufferType, start, maxSize int) ([]byte, Status)
	// SetBuffer replaces size bytes at start (start 0) or appends (start at
	// or past the end), as Envoy does.
	SetBuffer(b BufferType, start, size int, data []byte) Status

	// SendLocalResponse answers the stream from the proxy; the stream stops
	// whatever the running callback returns.
	SendLocalResponse(status int, details string, body []byte, headers [][2]string) Status

	// GetSharedData reads a key of the VM-id-wide shared map with its CAS.
	GetSharedData(key string) (value []byte, cas uint32, st Status)
	// SetSharedData writes a key; cas 0 is unconditional, otherwise a stale
	// cas on an existing key gives StatusCasMismatch.
	SetSharedData(key string, value []byte, cas uint32) Status

	// HTTPCall starts a callout from the root context; its answer arrives
	// with the returned token (HTTPCallResponder, or CalloutDelivery).
	HTTPCall(cluster string, headers [][2]string, body []byte, timeoutMs uint32) (token uint32, st Status)
	// SetEffectiveContext makes later calls act on another context, e.g. a
	// paused stream from inside a root callback.
	SetEffectiveContext(contextID uint32) Status
	// ContinueStream resumes a paused stream direction of the effective
	// context.
	ContinueStream(s StreamType) Status

	SetTickPeriod(ms uint32) Status
	// NowNanos is the proxy's wall clock in Unix nanoseconds.
	NowNanos() int64

	// DefineMetric returns an id for a metric; Envoy names it
	// "wasmcustom.<name>".
	DefineMetric(t MetricType, name string) (uint32, Status)
	IncrementMetric(id uint32, delta int64) Status
	RecordMetric(id uint32, v uint64) Status
	GetMetric(id uint32) (uint64, Status)

	// GetStatus explains the last failed callout (code 11 "reset" etc.).
	GetStatus() (code uint32, msg string)
}

// ScratchReader is a Host that can return a value in a buffer it reuses:
// the value is valid only until the next scratch read, and must not be kept
// or written. In the VM every value a host call returns is a fresh guest
// allocation; reading a value that is decoded at once (a bucket, a streamed
// chunk) through a scratch read spares the allocation and the collector the
// garbage. Callers check for it once and fall back to the copying call.
type ScratchReader interface {
	// GetSharedDataScratch is GetSharedData into the scratch buffer.
	GetSharedDataScratch(key string) (value []byte, cas uint32, st Status)
	// GetBufferScratch is GetBuffer into the scratch buffer.
	GetBufferScratch(b BufferType, start, maxSize int) ([]byte, Status)
	// GetHeaderScratch is GetHeader into the scratch buffer: the string
	// changes with the next scratch read.
	GetHeaderScratch(m MapType, name string) (string, Status)
	// AppendHeaders is GetHeaders appending to dst, which the caller
	// reuses; the strings are the caller's, as GetHeaders's are. On a
	// failure dst comes back as given.
	AppendHeaders(dst [][2]string, m MapType) ([][2]string, Status)
}

// HeaderAdder is a Host that can add headers to a map in two host calls
// whatever their number: it lists the map and writes it back whole
// (proxy_set_header_map_pairs, with which Envoy removes every header, then
// adds each pair), the listed headers first, as listed, then add's. Each of
// add's headers replaces every value of its name, as ReplaceHeader does. A
// replace per header costs a host call each; the listing and the whole-map
// write cost more than a call each, so this pays when several headers are
// added or the caller reads the map from the listing too. The merge leaves
// the listed headers where the host wrote them: only sizes and add's bytes
// are copied.
type HeaderAdder interface {
	// AddHeaders writes map m back with add after its own headers and
	// appends to dst the map's own headers that stay (those add does not
	// name), for reads within the callback: the map as written is those,
	// then add. Their strings are valid only until the next scratch read
	// (see ScratchReader). On a failure nothing was written and dst comes
	// back as given.
	AddHeaders(dst [][2]string, m MapType, add []Pair) ([][2]string, Status)
}

// The binding dispatches every callback to the SDK's context interfaces
// (types.VMContext, types.PluginContext, types.HttpContext; see dispatch.go).
// Envoy calls three callbacks those interfaces leave out; a context that
// wants them implements the matching interface below.

// HTTPCallResponder is a plugin context that takes
// proxy_on_http_call_response. The SDK hands each callout's answer to the
// function given to its DispatchHttpCall; Host.HTTPCall returns a token
// instead, and Envoy delivers the answer to the root context that made the
// call, so the binding delivers it here.
type HTTPCallResponder interface {
	OnHTTPCallResponse(token uint32, numHeaders, bodySize, numTrailers int)
}

// StreamDoner is an HTTP context that takes proxy_on_done, which Envoy
// calls after proxy_on_log (the SDK's OnHttpStreamDone): from then on
// nothing reaches the stream but a late callout answer.
type StreamDoner interface {
	OnDone()
}

// Deleter is a context (plugin or HTTP) that takes proxy_on_delete, the
// last callback it gets.
type Deleter interface {
	OnDelete()
}

// Stream is an HTTP context that takes every callback Envoy makes of one,
// the two the SDK's interface leaves out included.
type Stream interface {
	types.HttpContext
	StreamDoner
	Deleter
}

// StreamMaker is a plugin context that makes Streams. The binding learns
// that once per root; the streams of another root are asked for
// StreamDoner and Deleter with a type assertion at each of those
// callbacks, which costs the VM about a thousand instructions each.
type StreamMaker interface {
	NewStream(contextID uint32) Stream
}

// CalloutDelivery is a Host that hands callout answers to a function
// instead of to a root context's proxy_on_http_call_response: the SDK's
// DispatchHttpCall takes that function, so a binding over the SDK's
// proxywasm calls is one. The VM context says where answers go.
type CalloutDelivery interface {
	DeliverCallouts(to func(token uint32, numHeaders, bodySize, numTrailers int))
}
