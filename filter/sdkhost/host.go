//go:build !wasip1

// Package sdkhost is abi.Host over the proxy-wasm Go SDK's proxywasm
// host-call functions, for native builds: with it the filter's contexts run
// under the SDK's proxytest emulator in a plain go test (see
// docs/sdk-emulator.md). The shipped module keeps abi's own wasip1 binding:
// the SDK's binding to the proxy-wasm imports builds only with TinyGo.
//
// The SDK's functions answer with its status errors
// (types.ErrorStatusNotFound, ...); abi.StatusOf turns them back into the
// statuses the filter reads. Where the SDK has no call for what abi.Host
// offers, the binding builds it from the calls it has (see each method),
// so the filter sees Envoy's semantics.
package sdkhost

import (
	"math"
	"strings"
	"time"

	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// Host is the binding. It keeps no per-context state: the SDK's functions
// act on the context whose callback is running, as Envoy's do.
type Host struct {
	now     func() time.Time
	deliver func(token uint32, numHeaders, bodySize, numTrailers int)
	// current and root are the running context and its root, known when
	// the contexts are wrapped by Contexts (root 0 otherwise).
	current, root uint32
}

// New returns a binding reading the clock now (time.Now when nil): the SDK
// has no proxy_get_current_time_nanoseconds, its TinyGo modules read the
// clock through WASI.
func New(now func() time.Time) *Host {
	if now == nil {
		now = time.Now
	}
	return &Host{now: now}
}

var (
	_ abi.Host            = (*Host)(nil)
	_ abi.CalloutDelivery = (*Host)(nil)
)

// DeliverCallouts says where callout answers go: the SDK calls back the
// function given to DispatchHttpCall, and the binding calls to with the
// call's token, as proxy_on_http_call_response would.
func (h *Host) DeliverCallouts(to func(token uint32, numHeaders, bodySize, numTrailers int)) {
	h.deliver = to
}

func (h *Host) Log(level abi.LogLevel, msg string) {
	switch level {
	case abi.LogTrace:
		proxywasm.LogTrace(msg)
	case abi.LogDebug:
		proxywasm.LogDebug(msg)
	case abi.LogInfo:
		proxywasm.LogInfo(msg)
	case abi.LogWarn:
		proxywasm.LogWarn(msg)
	case abi.LogError:
		proxywasm.LogError(msg)
	default:
		proxywasm.LogCritical(msg)
	}
}

// owned copies what the SDK returns: its functions hand over the host's
// memory (the emulator's own buffers), and abi.Host's caller owns what it
// gets.
func owned(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func (h *Host) GetProperty(path ...string) ([]byte, abi.Status) {
	v, err := proxywasm.GetProperty(path)
	return owned(v), abi.StatusOf(err)
}

// SetFilterState is proxy_set_property on the one-segment path name, as
// the wasip1 binding sends it.
func (h *Host) SetFilterState(name string, value []byte) abi.Status {
	return abi.StatusOf(proxywasm.SetProperty([]string{name}, value))
}

func (h *Host) GetHeader(m abi.MapType, name string) (string, abi.Status) {
	var v string
	var err error
	switch m {
	case abi.MapRequestHeaders:
		v, err = proxywasm.GetHttpRequestHeader(name)
	case abi.MapRequestTrailers:
		v, err = proxywasm.GetHttpRequestTrailer(name)
	case abi.MapResponseHeaders:
		v, err = proxywasm.GetHttpResponseHeader(name)
	case abi.MapResponseTrailers:
		v, err = proxywasm.GetHttpResponseTrailer(name)
	case abi.MapHTTPCallResponseHeaders, abi.MapHTTPCallResponseTrailers:
		// The SDK reads a callout's answer only whole.
		pairs, st := h.GetHeaders(m)
		if st != abi.StatusOK {
			return "", st
		}
		name = strings.ToLower(name)
		for _, p := range pairs {
			if p[0] == name {
				return p[1], abi.StatusOK
			}
		}
		return "", abi.StatusNotFound
	default:
		return "", abi.StatusBadArgument
	}
	return v, abi.StatusOf(err)
}

func (h *Host) AddHeader(m abi.MapType, name, value string) abi.Status {
	switch m {
	case abi.MapRequestHeaders:
		return abi.StatusOf(proxywasm.AddHttpRequestHeader(name, value))
	case abi.MapRequestTrailers:
		return abi.StatusOf(proxywasm.AddHttpRequestTrailer(name, value))
	case abi.MapResponseHeaders:
		return abi.StatusOf(proxywasm.AddHttpResponseHeader(name, value))
	case abi.MapResponseTrailers:
		return abi.StatusOf(proxywasm.AddHttpResponseTrailer(name, value))
	}
	return abi.StatusBadArgument
}

func (h *Host) ReplaceHeader(m abi.MapType, name, value string) abi.Status {
	switch m {
	case abi.MapRequestHeaders:
		return abi.StatusOf(proxywasm.ReplaceHttpRequestHeader(name, value))
	case abi.MapRequestTrailers:
		return abi.StatusOf(proxywasm.ReplaceHttpRequestTrailer(name, value))
	case abi.MapResponseHeaders:
		return abi.StatusOf(proxywasm.ReplaceHttpResponseHeader(name, value))
	case abi.MapResponseTrailers:
		return abi.StatusOf(proxywasm.ReplaceHttpResponseTrailer(name, value))
	}
	return abi.StatusBadArgument
}

func (h *Host) RemoveHeader(m abi.MapType, name string) abi.Status {
	switch m {
	case abi.MapRequestHeaders:
		return abi.StatusOf(proxywasm.RemoveHttpRequestHeader(name))
	case abi.MapRequestTrailers:
		return abi.StatusOf(proxywasm.RemoveHttpRequestTrailer(name))
	case abi.MapResponseHeaders:
		return abi.StatusOf(proxywasm.RemoveHttpResponseHeader(name))
	case abi.MapResponseTrailers:
		return abi.StatusOf(proxywasm.RemoveHttpResponseTrailer(name))
	}
	return abi.StatusBadArgument
}

// GetHeaders reads a whole map. The SDK reports an empty map as not found
// (the host returned no pointer); Envoy answers Ok, so does the binding.
func (h *Host) GetHeaders(m abi.MapType) ([][2]string, abi.Status) {
	var pairs [][2]string
	var err error
	switch m {
	case abi.MapRequestHeaders:
		pairs, err = proxywasm.GetHttpRequestHeaders()
	case abi.MapRequestTrailers:
		pairs, err = proxywasm.GetHttpRequestTrailers()
	case abi.MapResponseHeaders:
		pairs, err = proxywasm.GetHttpResponseHeaders()
	case abi.MapResponseTrailers:
		pairs, err = proxywasm.GetHttpResponseTrailers()
	case abi.MapHTTPCallResponseHeaders:
		pairs, err = proxywasm.GetHttpCallResponseHeaders()
	case abi.MapHTTPCallResponseTrailers:
		pairs, err = proxywasm.GetHttpCallResponseTrailers()
	default:
		return nil, abi.StatusBadArgument
	}
	if st := abi.StatusOf(err); st != abi.StatusOK && st != abi.StatusNotFound {
		return nil, st
	}
	return pairs, abi.StatusOK
}

// GetBuffer reads up to maxSize bytes from start. A zero-byte read answers
// Ok and empty without a host call, as Envoy answers it (the SDK's
// emulator answers not found for an empty buffer).
func (h *Host) GetBuffer(b abi.BufferType, start, maxSize int) ([]byte, abi.Status) {
	if start < 0 || maxSize < 0 {
		return nil, abi.StatusBadArgument
	}
	if maxSize == 0 {
		return nil, abi.StatusOK
	}
	var v []byte
	var err error
	switch b {
	case abi.BufferRequestBody:
		v, err = proxywasm.GetHttpRequestBody(start, maxSize)
	case abi.BufferResponseBody:
		v, err = proxywasm.GetHttpResponseBody(start, maxSize)
	case abi.BufferHTTPCallResponseBody:
		v, err = proxywasm.GetHttpCallResponseBody(start, maxSize)
	case abi.BufferVMConfiguration, abi.BufferPluginConfiguration:
		// The SDK reads a configuration only whole.
		if b == abi.BufferVMConfiguration {
			v, err = proxywasm.GetVMConfiguration()
		} else {
			v, err = proxywasm.GetPluginConfiguration()
		}
		if err == nil {
			v = v[min(start, len(v)):min(start+maxSize, len(v))]
		}
	default:
		return nil, abi.StatusBadArgument
	}
	if err != nil {
		return nil, abi.StatusOf(err)
	}
	return owned(v), abi.StatusOK
}

// SetBuffer has Envoy's semantics: start 0 replaces the first size bytes
// with data (size 0 prepends), a start at or past the end appends, any
// other start is a bad argument. The SDK offers whole-body replace, prepend
// and append; the binding reads the body to compose the first from them.
func (h *Host) SetBuffer(b abi.BufferType, start, size int, data []byte) abi.Status {
	if start < 0 || size < 0 {
		return abi.StatusBadArgument
	}
	var get func(int, int) ([]byte, error)
	var replace, appendTo func([]byte) error
	switch b {
	case abi.BufferRequestBody:
		get, replace, appendTo = proxywasm.GetHttpRequestBody, proxywasm.ReplaceHttpRequestBody, proxywasm.AppendHttpRequestBody
	case abi.BufferResponseBody:
		get, replace, appendTo = proxywasm.GetHttpResponseBody, proxywasm.ReplaceHttpResponseBody, proxywasm.AppendHttpResponseBody
	default:
		return abi.StatusBadArgument
	}
	cur, err := get(0, math.MaxInt32)
	if st := abi.StatusOf(err); st != abi.StatusOK && st != abi.StatusNotFound {
		return st // not found is an empty body
	}
	switch {
	case start == 0:
		next := append(owned(data), cur[min(size, len(cur)):]...)
		return abi.StatusOf(replace(next))
	case start >= len(cur):
		return abi.StatusOf(appendTo(data))
	}
	return abi.StatusBadArgument
}

// SendLocalResponse is the SDK's SendHttpResponse, which sends no details
// (Envoy's response code details): they are lost on this host.
func (h *Host) SendLocalResponse(status int, details string, body []byte, headers [][2]string) abi.Status {
	if status < 0 || status > math.MaxUint32 {
		return abi.StatusBadArgument
	}
	return abi.StatusOf(proxywasm.SendHttpResponse(uint32(status), headers, body, -1))
}

func (h *Host) GetSharedData(key string) ([]byte, uint32, abi.Status) {
	v, cas, err := proxywasm.GetSharedData(key)
	return owned(v), cas, abi.StatusOf(err)
}

func (h *Host) SetSharedData(key string, value []byte, cas uint32) abi.Status {
	return abi.StatusOf(proxywasm.SetSharedData(key, value, cas))
}

// HTTPCall dispatches the call; its answer reaches the function given to
// DeliverCallouts with the returned token. Under Contexts the call is made
// from the running context's root, so its answer arrives even after the
// stream that asked is gone, as in Envoy.
func (h *Host) HTTPCall(cluster string, headers [][2]string, body []byte, timeoutMs uint32) (uint32, abi.Status) {
	root, cur := h.root, h.current
	if root != 0 && cur != root {
		if st := h.SetEffectiveContext(root); st != abi.StatusOK {
			return 0, st
		}
		defer h.SetEffectiveContext(cur)
	}
	var token uint32
	var err error
	token, err = proxywasm.DispatchHttpCall(cluster, headers, body, nil, timeoutMs, func(numHeaders, bodySize, numTrailers int) {
		if h.deliver == nil {
			return
		}
		// The SDK runs the answer in the calling (root) context.
		prev, prevRoot := h.current, h.root
		h.current, h.root = root, root
		defer func() { h.current, h.root = prev, prevRoot }()
		h.deliver(token, numHeaders, bodySize, numTrailers)
	})
	return token, abi.StatusOf(err)
}

func (h *Host) SetEffectiveContext(contextID uint32) abi.Status {
	st := abi.StatusOf(proxywasm.SetEffectiveContext(contextID))
	if st == abi.StatusOK {
		h.current = contextID
	}
	return st
}

func (h *Host) ContinueStream(s abi.StreamType) abi.Status {
	switch s {
	case abi.StreamRequest:
		return abi.StatusOf(proxywasm.ResumeHttpRequest())
	case abi.StreamResponse:
		return abi.StatusOf(proxywasm.ResumeHttpResponse())
	}
	return abi.StatusBadArgument
}

func (h *Host) SetTickPeriod(ms uint32) abi.Status {
	return abi.StatusOf(proxywasm.SetTickPeriodMilliSeconds(ms))
}

func (h *Host) NowNanos() int64 { return h.now().UnixNano() }

// The SDK's metric calls panic on a failed status; guarded turns that back
// into one (the panic names no status: the emulator fails only an unknown
// id, a bad argument).
func guarded(f func()) (st abi.Status) {
	defer func() {
		if recover() != nil {
			st = abi.StatusBadArgument
		}
	}()
	f()
	return abi.StatusOK
}

func (h *Host) DefineMetric(t abi.MetricType, name string) (uint32, abi.Status) {
	var id uint32
	st := guarded(func() {
		switch t {
		case abi.MetricCounter:
			id = uint32(proxywasm.DefineCounterMetric(name))
		case abi.MetricGauge:
			id = uint32(proxywasm.DefineGaugeMetric(name))
		case abi.MetricHistogram:
			id = uint32(proxywasm.DefineHistogramMetric(name))
		default:
			panic("unknown metric type")
		}
	})
	return id, st
}

// IncrementMetric is proxy_increment_metric, which the SDK sends for a
// gauge's Add (a counter's Increment takes no negative delta).
func (h *Host) IncrementMetric(id uint32, delta int64) abi.Status {
	return guarded(func() { proxywasm.MetricGauge(id).Add(delta) })
}

// RecordMetric is proxy_record_metric, which the SDK sends for a
// histogram's Record.
func (h *Host) RecordMetric(id uint32, v uint64) abi.Status {
	return guarded(func() { proxywasm.MetricHistogram(id).Record(v) })
}

func (h *Host) GetMetric(id uint32) (uint64, abi.Status) {
	var v uint64
	st := guarded(func() { v = proxywasm.MetricCounter(id).Value() })
	return v, st
}

// GetStatus has nothing to report: the SDK has no proxy_get_status, and
// its emulator fails a callout only by answering it with nothing, which
// the filter reads as a reset.
func (h *Host) GetStatus() (uint32, string) { return 0, "" }
