// Command gwguest is the gateway tests' proxy-wasm module: small enough to read in one sitting, it
// shows each thing the gateway must carry between client, filter and upstream.
//
//   - proxy_on_configure rejects a config containing "reject" (the canary must refuse it) and
//     stores the config, which the response gets back in header x-gw-config (shows reloads).
//   - request header x-gw-action: "local" answers 429 locally; "buffer" holds the request body
//     until end of stream and prefixes it with "buffered:" (a rewritten, buffered body);
//     "hold-headers" stops the request headers until the next proxy_on_tick resumes the stream
//     (an asynchronous continue, like a callout answer); "buffer-response" holds the response
//     body until its end; "keys" answers 200 locally with what the filter sees of the key
//     headers: "value=<first authorization> auth=<each authorization entry>|... api=<each
//     x-api-key entry>|..." (the header value call against every entry of the map).
//   - response headers get x-gw-config; metric rate_limit_exceeded_total_limit_type=token_budget
//     counts responses (a tagged name for /stats/prometheus).
//   - at proxy_on_done a stream that saw the response end counts gw_streams_completed_total, any
//     other gw_streams_cut_total (what the filter sees when a client or upstream goes away).
package main

import "unsafe"

func main() {}

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(typ, start, length uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport env proxy_set_buffer_bytes
func proxySetBufferBytes(typ, start, length uint32, data unsafe.Pointer, size uint32) uint32

//go:wasmimport env proxy_get_header_map_value
func proxyGetHeader(typ uint32, key unsafe.Pointer, keySize uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(typ uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport env proxy_replace_header_map_value
func proxyReplaceHeader(typ uint32, key unsafe.Pointer, keySize uint32, val unsafe.Pointer, valSize uint32) uint32

//go:wasmimport env proxy_send_local_response
func proxySendLocalResponse(status uint32, details unsafe.Pointer, detailsSize uint32, body unsafe.Pointer, bodySize uint32, headers unsafe.Pointer, headersSize uint32, grpc int32) uint32

//go:wasmimport env proxy_set_tick_period_milliseconds
func proxySetTickPeriod(ms uint32) uint32

//go:wasmimport env proxy_set_effective_context
func proxySetEffectiveContext(id uint32) uint32

//go:wasmimport env proxy_continue_stream
func proxyContinueStream(typ uint32) uint32

//go:wasmimport env proxy_define_metric
func proxyDefineMetric(typ uint32, name unsafe.Pointer, size uint32, id *uint32) uint32

//go:wasmimport env proxy_increment_metric
func proxyIncrementMetric(id uint32, delta int64) uint32

var keep = map[uint32][]byte{}

//go:wasmexport proxy_abi_version_0_2_1
func abiVersion() {}

//go:wasmexport proxy_on_memory_allocate
func memAlloc(size uint32) uint32 {
	if size == 0 {
		size = 1
	}
	b := make([]byte, size)
	p := uint32(uintptr(unsafe.Pointer(&b[0])))
	keep[p] = b
	return p
}

func take(ptr, size uint32) string {
	b, ok := keep[ptr]
	delete(keep, ptr)
	if !ok || size == 0 || int(size) > len(b) {
		return ""
	}
	return string(b[:size])
}

func sp(s string) (unsafe.Pointer, uint32) {
	if s == "" {
		return nil, 0
	}
	return unsafe.Pointer(unsafe.StringData(s)), uint32(len(s))
}

func header(typ uint32, k string) string {
	var ptr, size uint32
	p, n := sp(k)
	if proxyGetHeader(typ, p, n, &ptr, &size) != 0 {
		return ""
	}
	return take(ptr, size)
}

func setHeader(typ uint32, k, v string) {
	kp, kn := sp(k)
	vp, vn := sp(v)
	proxyReplaceHeader(typ, kp, kn, vp, vn)
}

func buffer(typ, size uint32) string {
	var ptr, sz uint32
	if proxyGetBufferBytes(typ, 0, size, &ptr, &sz) != 0 {
		return ""
	}
	return take(ptr, sz)
}

func metric(name string) uint32 {
	var id uint32
	p, n := sp(name)
	proxyDefineMetric(0, p, n, &id)
	return id
}

var (
	config                              string
	mExceeded, mCompleted, mCut         uint32
	actions                                    = map[uint32]string{}
	ended                                      = map[uint32]bool{}
	held                                       = map[uint32]bool{} // request headers stopped until the next tick
	bufferTypeRequest, bufferTypeConfig uint32 = 0, 7
)

//go:wasmexport proxy_on_context_create
func onContextCreate(id, parent uint32) {}

//go:wasmexport proxy_on_vm_start
func onVMStart(id, size uint32) uint32 { return 1 }

//go:wasmexport proxy_on_configure
func onConfigure(id, size uint32) uint32 {
	c := buffer(bufferTypeConfig, size)
	for i := 0; i+6 <= len(c); i++ {
		if c[i:i+6] == "reject" {
			return 0
		}
	}
	config = c
	mExceeded = metric("rate_limit_exceeded_total_limit_type=token_budget")
	mCompleted = metric("gw_streams_completed_total")
	mCut = metric("gw_streams_cut_total")
	proxySetTickPeriod(10)
	return 1
}

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(id, n, eos uint32) uint32 {
	a := header(0, "x-gw-action")
	actions[id] = a
	switch a {
	case "local":
		body := "refused by gwguest"
		bp, bn := sp(body)
		proxySendLocalResponse(429, nil, 0, bp, bn, nil, 0, -1)
		return 1
	case "hold-headers":
		held[id] = true
		return 1 // resumed from proxy_on_tick, as a callout answer would
	case "keys":
		var ptr, size uint32
		proxyGetHeaderMapPairs(0, &ptr, &size)
		all := take(ptr, size)
		body := "value=" + header(0, "authorization") + " auth=" + entries(all, "authorization") +
			" api=" + entries(all, "x-api-key")
		bp, bn := sp(body)
		proxySendLocalResponse(200, nil, 0, bp, bn, nil, 0, -1)
		return 1
	}
	return 0
}

// entries joins with "|" the values of every entry named name in a pairs buffer.
func entries(b, name string) string {
	if len(b) < 4 {
		return ""
	}
	le := func(i int) int { return int(b[i]) | int(b[i+1])<<8 | int(b[i+2])<<16 | int(b[i+3])<<24 }
	n := le(0)
	off := 4 + 8*n
	out := ""
	for i := 0; i < n; i++ {
		kl, vl := le(4+8*i), le(8+8*i)
		if b[off:off+kl] == name {
			if out != "" {
				out += "|"
			}
			out += b[off+kl+1 : off+kl+1+vl]
		}
		off += kl + vl + 2
	}
	return out
}

//go:wasmexport proxy_on_tick
func onTick(root uint32) {
	for id := range held {
		delete(held, id)
		if proxySetEffectiveContext(id) == 0 {
			proxyContinueStream(0)
		}
	}
}

//go:wasmexport proxy_on_request_body
func onRequestBody(id, size, eos uint32) uint32 {
	if actions[id] != "buffer" {
		return 0
	}
	if eos == 0 {
		return 1 // StopIterationAndBuffer
	}
	body := "buffered:" + buffer(bufferTypeRequest, size)
	p, n := sp(body)
	proxySetBufferBytes(bufferTypeRequest, 0, size, p, n)
	return 0
}

//go:wasmexport proxy_on_response_headers
func onResponseHeaders(id, n, eos uint32) uint32 {
	setHeader(2, "x-gw-config", config)
	proxyIncrementMetric(mExceeded, 1)
	if eos != 0 {
		ended[id] = true
	}
	return 0
}

//go:wasmexport proxy_on_response_body
func onResponseBody(id, size, eos uint32) uint32 {
	if eos != 0 {
		ended[id] = true
		return 0
	}
	if actions[id] == "buffer-response" {
		return 1 // StopIterationAndBuffer: the whole response goes out at its end
	}
	return 0
}

//go:wasmexport proxy_on_log
func onLog(id uint32) {}

//go:wasmexport proxy_on_done
func onDone(id uint32) uint32 {
	if ended[id] {
		proxyIncrementMetric(mCompleted, 1)
	} else if actions[id] != "local" {
		proxyIncrementMetric(mCut, 1)
	}
	return 1
}

//go:wasmexport proxy_on_delete
func onDelete(id uint32) {
	delete(actions, id)
	delete(ended, id)
	delete(held, id)
}
