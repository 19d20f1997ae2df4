// Command guest is a small proxy-wasm test module for the envoy/host tests: every callback logs
// "cb <name> <context>" and the request header x-action selects one behaviour.
package main

import (
	"strconv"
	"unsafe"
)

func main() {}

//go:wasmimport env proxy_log
func proxyLog(level uint32, msg unsafe.Pointer, size uint32) uint32

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(typ, start, length uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport env proxy_set_buffer_bytes
func proxySetBufferBytes(typ, start, length uint32, data unsafe.Pointer, size uint32) uint32

//go:wasmimport env proxy_get_header_map_value
func proxyGetHeader(typ uint32, key unsafe.Pointer, keySize uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport env proxy_replace_header_map_value
func proxyReplaceHeader(typ uint32, key unsafe.Pointer, keySize uint32, val unsafe.Pointer, valSize uint32) uint32

//go:wasmimport env proxy_get_header_map_size
func proxyGetHeaderMapSize(typ uint32, size *uint32) uint32

//go:wasmimport env proxy_send_local_response
func proxySendLocalResponse(status uint32, details unsafe.Pointer, detailsSize uint32, body unsafe.Pointer, bodySize uint32, headers unsafe.Pointer, headersSize uint32, grpc int32) uint32

//go:wasmimport env proxy_get_shared_data
func proxyGetSharedData(key unsafe.Pointer, keySize uint32, ptr *uint32, size *uint32, cas *uint32) uint32

//go:wasmimport env proxy_set_shared_data
func proxySetSharedData(key unsafe.Pointer, keySize uint32, val unsafe.Pointer, valSize uint32, cas uint32) uint32

//go:wasmimport env proxy_http_call
func proxyHTTPCall(up unsafe.Pointer, upSize uint32, hdr unsafe.Pointer, hdrSize uint32, body unsafe.Pointer, bodySize uint32, tr unsafe.Pointer, trSize uint32, timeout uint32, token *uint32) uint32

//go:wasmimport env proxy_set_effective_context
func proxySetEffectiveContext(id uint32) uint32

//go:wasmimport env proxy_continue_stream
func proxyContinueStream(typ uint32) uint32

//go:wasmimport env proxy_get_status
func proxyGetStatus(code *uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport env proxy_define_metric
func proxyDefineMetric(typ uint32, name unsafe.Pointer, size uint32, id *uint32) uint32

//go:wasmimport env proxy_increment_metric
func proxyIncrementMetric(id uint32, delta int64) uint32

//go:wasmimport env proxy_record_metric
func proxyRecordMetric(id uint32, val int64) uint32

//go:wasmimport env proxy_get_property
func proxyGetProperty(path unsafe.Pointer, size uint32, ptr *uint32, sz *uint32) uint32

//go:wasmimport env proxy_set_property
func proxySetProperty(path unsafe.Pointer, size uint32, val unsafe.Pointer, valSize uint32) uint32

//go:wasmimport env proxy_set_tick_period_milliseconds
func proxySetTickPeriod(ms uint32) uint32

//go:wasmimport env proxy_get_current_time_nanoseconds
func proxyGetTime(t *uint64) uint32

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(typ uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport env proxy_set_header_map_pairs
func proxySetHeaderMapPairs(typ uint32, ptr unsafe.Pointer, size uint32) uint32

//go:wasmimport env proxy_get_metric
func proxyGetMetric(id uint32, val *uint64) uint32

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
	if size == 0 {
		return ""
	}
	b := keep[ptr]
	delete(keep, ptr)
	return string(b[:size])
}

func sp(s string) (unsafe.Pointer, uint32) {
	if s == "" {
		return nil, 0
	}
	return unsafe.Pointer(unsafe.StringData(s)), uint32(len(s))
}

func logf(msg string) {
	p, n := sp(msg)
	proxyLog(2, p, n)
}

func u(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

func header(typ uint32, k string) (string, uint32) {
	var ptr, size uint32
	p, n := sp(k)
	st := proxyGetHeader(typ, p, n, &ptr, &size)
	if st != 0 {
		return "", st
	}
	return take(ptr, size), 0
}

func pairs(kv ...string) []byte {
	n := len(kv) / 2
	b := make([]byte, 4+8*n)
	put := func(off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	put(0, uint32(n))
	for i := 0; i < n; i++ {
		put(4+8*i, uint32(len(kv[2*i])))
		put(8+8*i, uint32(len(kv[2*i+1])))
	}
	for i := 0; i < n; i++ {
		b = append(b, kv[2*i]...)
		b = append(b, 0)
		b = append(b, kv[2*i+1]...)
		b = append(b, 0)
	}
	return b
}

func bp(b []byte) (unsafe.Pointer, uint32) {
	if len(b) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(&b[0]), uint32(len(b))
}

var (
	rootID  uint32
	actions = map[uint32]string{} // stream context -> x-action
	calls   = map[uint32]uint32{} // token -> stream context
	config  string
)

//go:wasmexport proxy_on_context_create
func onContextCreate(id, parent uint32) {
	if parent == 0 {
		rootID = id
	}
	logf("cb create " + u(id) + " " + u(parent))
}

//go:wasmexport proxy_on_vm_start
func onVMStart(id, size uint32) uint32 {
	logf("cb vm_start " + u(id))
	return 1
}

//go:wasmexport proxy_on_configure
func onConfigure(id, size uint32) uint32 {
	var ptr, sz uint32
	config = ""
	if size > 0 && proxyGetBufferBytes(7, 0, size, &ptr, &sz) == 0 {
		config = take(ptr, sz)
	}
	logf("cb configure " + u(id) + " " + config)
	if config == "reject" {
		return 0
	}
	if config == "tick" {
		proxySetTickPeriod(1000)
	}
	return 1
}

//go:wasmexport proxy_on_tick
func onTick(id uint32) {
	logf("cb tick " + u(id))
}

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(id, n, eos uint32) uint32 {
	a, _ := header(0, "x-action")
	actions[id] = a
	logf("cb request_headers " + u(id))
	switch a {
	case "stop":
		return 1
	case "local":
		d, dn := sp("denied_by_test")
		b, bn := sp("nope")
		h, hn := bp(pairs("x-reason", "budget"))
		proxySendLocalResponse(429, d, dn, b, bn, h, hn, -1)
		return 0
	case "buffer", "rewrite":
		return 0
	case "call":
		cluster, _ := header(0, "x-cluster")
		timeout, _ := header(0, "x-timeout")
		t, _ := strconv.Atoi(timeout)
		hdr := pairs(":method", "POST", ":path", "/reserve", ":authority", "store", "x-from", "guest")
		body := "hello"
		cp, cn := sp(cluster)
		hp, hn := bp(hdr)
		bpp, bn := sp(body)
		var token uint32
		st := proxyHTTPCall(cp, cn, hp, hn, bpp, bn, nil, 0, uint32(int32(t)), &token)
		logf("http_call status " + u(st) + " token " + u(token))
		if st != 0 {
			return 0
		}
		calls[token] = id
		return 1
	case "cas":
		key, kn := sp("counter")
		for {
			var ptr, sz, cas uint32
			st := proxyGetSharedData(key, kn, &ptr, &sz, &cas)
			n := 0
			if st == 0 {
				n, _ = strconv.Atoi(take(ptr, sz))
			}
			val := strconv.Itoa(n + 1)
			vp, vn := sp(val)
			if proxySetSharedData(key, kn, vp, vn, cas) == 0 {
				break
			}
		}
		return 0
	case "metrics":
		var c, g, hh uint32
		name := "custom_counts_value=foo_reporter=x"
		p, pn := sp(name)
		proxyDefineMetric(0, p, pn, &c)
		gp, gn := sp("active_gauge")
		proxyDefineMetric(1, gp, gn, &g)
		hp, hn := sp("latency_ms")
		proxyDefineMetric(2, hp, hn, &hh)
		logf("metric inc0 " + u(proxyIncrementMetric(c, 0)))
		proxyIncrementMetric(c, 2)
		proxyRecordMetric(g, 7)
		proxyRecordMetric(hh, 3)
		return 0
	case "props":
		for _, path := range []string{"source\x00address", "source\x00port", "request\x00path", "request\x00url_path",
			"request\x00host", "request\x00method", "request\x00query", "plugin_name", "plugin_root_id", "plugin_vm_id",
			"metadata\x00team", "request\x00id", "missing\x00thing", "request\x00time"} {
			var ptr, sz uint32
			p, pn := sp(path)
			st := proxyGetProperty(p, pn, &ptr, &sz)
			v := take(ptr, sz)
			if path == "source\x00port" || path == "request\x00time" {
				var x uint64
				for i := len(v) - 1; i >= 0; i-- {
					x = x<<8 | uint64(v[i])
				}
				v = strconv.FormatUint(x, 10)
			}
			logf("prop " + path + " " + u(st) + " " + v)
		}
		kp, kn := sp("my\x00prop")
		vp, vn := sp("set-value")
		proxySetProperty(kp, kn, vp, vn)
		var ptr, sz uint32
		st := proxyGetProperty(kp, kn, &ptr, &sz)
		logf("prop my " + u(st) + " " + take(ptr, sz))
		var t uint64
		proxyGetTime(&t)
		logf("time " + strconv.FormatUint(t, 10))
		return 0
	case "panic":
		panic("boom")
	case "first":
		// x-dup's value as proxy_get_header_map_value gives it, then every entry of the map.
		v, st := header(0, "x-dup")
		var ptr, size uint32
		proxyGetHeaderMapPairs(0, &ptr, &size)
		logf("first " + u(st) + " " + v + " pairs " + strconv.Itoa(countPairs(take(ptr, size), "x-dup")))
	case "pairs-empty":
		var ptr, size uint32
		st := proxyGetHeaderMapPairs(1, &ptr, &size) // request trailers: none
		logf("pairs trailers " + u(st) + " " + u(ptr) + " " + u(size))
		h, hn := bp(pairs())
		logf("set empty " + u(proxySetHeaderMapPairs(0, h, hn)))
		ptr, size = 7, 7
		st = proxyGetHeaderMapPairs(0, &ptr, &size)
		logf("pairs emptied " + u(st) + " " + u(ptr) + " " + u(size))
		g, gn := bp([]byte{9, 9, 9})
		logf("set garbage " + u(proxySetHeaderMapPairs(0, g, gn)))
		ptr, size = 7, 7
		st = proxyGetHeaderMapPairs(9, &ptr, &size)
		logf("pairs type 9 " + u(st))
		k, kn := sp("x-new")
		v, vn := sp("1")
		proxyReplaceHeader(0, k, kn, v, vn)
		st = proxyGetHeaderMapPairs(0, &ptr, &size)
		logf("pairs one " + u(st) + " " + strconv.FormatBool(ptr != 0) + " " + u(size))
	case "local-bad-pairs":
		d, dn := sp("bad pairs\there")
		b, bn := sp("nope")
		g, gn := bp([]byte{1, 0, 0, 0, 200, 0, 0, 0, 1, 0, 0, 0, 'x'})
		logf("local status " + u(proxySendLocalResponse(403, d, dn, b, bn, g, gn, -1)))
		return 0 // Continue: the host must stop anyway
	case "local-on-body":
		return 0
	case "ids":
		var c1, g1, h1, c2 uint32
		n1, l1 := sp("ids_c1")
		proxyDefineMetric(0, n1, l1, &c1)
		n2, l2 := sp("ids_g1")
		proxyDefineMetric(1, n2, l2, &g1)
		n3, l3 := sp("ids_h1")
		proxyDefineMetric(2, n3, l3, &h1)
		proxyDefineMetric(0, n1, l1, &c2) // the same name again: a new id
		logf("ids " + u(c1) + " " + u(g1) + " " + u(h1) + " " + u(c2))
		var val uint64
		logf("get histogram " + u(proxyGetMetric(h1, &val)))
		logf("get undefined gauge " + u(proxyGetMetric(c2|1, &val)))
		logf("inc histogram " + u(proxyIncrementMetric(h1, 1)))
		logf("inc gauge -2 " + u(proxyIncrementMetric(g1, -2)))
		proxyGetMetric(g1, &val)
		logf("gauge " + strconv.FormatInt(int64(val), 10))
		cluster, _ := header(0, "x-cluster")
		cp, cn := sp(cluster)
		hdr := pairs(":method", "GET", ":path", "/", ":authority", "store")
		hp, hn := bp(hdr)
		var t1, t2, t3 uint32
		proxyHTTPCall(cp, cn, hp, hn, nil, 0, nil, 0, 1000, &t1)
		proxyHTTPCall(cp, cn, hp, hn, nil, 0, nil, 0, 1000, &t2)
		t3 = 99
		bad, badn := bp([]byte{5})
		st := proxyHTTPCall(cp, cn, bad, badn, nil, 0, nil, 0, 1000, &t3)
		logf("tokens " + u(t1) + " " + u(t2) + " bad " + u(st) + " " + u(t3))
	}
	return 0
}

// countPairs counts the entries named name in a pairs buffer.
func countPairs(b, name string) int {
	if len(b) < 4 {
		return 0
	}
	le := func(i int) int { return int(b[i]) | int(b[i+1])<<8 | int(b[i+2])<<16 | int(b[i+3])<<24 }
	n := le(0)
	off := 4 + 8*n
	count := 0
	for i := 0; i < n; i++ {
		kl, vl := le(4+8*i), le(8+8*i)
		if b[off:off+kl] == name {
			count++
		}
		off += kl + vl + 2
	}
	return count
}

//go:wasmexport proxy_on_request_body
func onRequestBody(id, size, eos uint32) uint32 {
	logf("cb request_body " + u(id) + " " + u(size) + " " + u(eos))
	switch actions[id] {
	case "readonly":
		k, kn := sp("x-late")
		v, vn := sp("1")
		logf("replace after continue " + u(proxyReplaceHeader(0, k, kn, v, vn)))
		var sz uint32
		logf("size after continue " + u(proxyGetHeaderMapSize(0, &sz)))
	case "buffer", "rewrite":
		if eos == 0 {
			return 1
		}
		var ptr, sz uint32
		proxyGetBufferBytes(0, 0, size, &ptr, &sz)
		logf("body " + take(ptr, sz))
		if actions[id] == "rewrite" {
			nb, nn := sp("REWRITTEN")
			proxySetBufferBytes(0, 0, size, nb, nn)
		}
	case "panic-body":
		panic("boom in body")
	case "past-end":
		// Reads starting at, inside and past the end of the buffered body.
		for _, start := range []uint32{size + 10, size, size - 2} {
			ptr, sz := uint32(7), uint32(7)
			st := proxyGetBufferBytes(0, start, 5, &ptr, &sz)
			logf("read " + u(start) + " " + u(st) + " " + strconv.FormatBool(ptr != 0) + " " + u(sz) + " " + take(ptr, sz))
		}
		logf("read type 9 " + u(proxyGetBufferBytes(9, 0, 1, nil, nil)))
	case "local-on-body":
		d, dn := sp("denied_in_body")
		proxySendLocalResponse(413, d, dn, nil, 0, nil, 0, -1)
		return 0 // Continue: the body must not go upstream
	}
	return 0
}

//go:wasmexport proxy_on_response_headers
func onResponseHeaders(id, n, eos uint32) uint32 {
	st, _ := header(2, ":status")
	logf("cb response_headers " + u(id) + " " + st)
	k, kn := sp("x-filter")
	v, vn := sp("seen")
	proxyReplaceHeader(2, k, kn, v, vn)
	if actions[id] == "local-on-response" && st != "418" {
		d, dn := sp("denied_on_response")
		proxySendLocalResponse(418, d, dn, nil, 0, nil, 0, -1)
		return 0 // Continue: the upstream's headers must not go out
	}
	return 0
}

//go:wasmexport proxy_on_response_body
func onResponseBody(id, size, eos uint32) uint32 {
	logf("cb response_body " + u(id) + " " + u(size) + " " + u(eos))
	return 0
}

//go:wasmexport proxy_on_log
func onLog(id uint32) { logf("cb log " + u(id)) }

//go:wasmexport proxy_on_done
func onDone(id uint32) uint32 {
	logf("cb done " + u(id))
	return 1
}

//go:wasmexport proxy_on_delete
func onDelete(id uint32) {
	delete(actions, id)
	logf("cb delete " + u(id))
}

//go:wasmexport proxy_on_http_call_response
func onHTTPCallResponse(id, token, nh, bodySize, nt uint32) {
	var code, ptr, sz uint32
	proxyGetStatus(&code, &ptr, &sz)
	msg := take(ptr, sz)
	var body string
	if bodySize > 0 {
		var bp2, bs uint32
		proxyGetBufferBytes(4, 0, bodySize, &bp2, &bs)
		body = take(bp2, bs)
	}
	st, _ := header(6, ":status")
	logf("cb http_response " + u(id) + " token " + u(token) + " " + u(nh) + " " + u(bodySize) + " " + u(nt) +
		" status " + u(code) + " " + msg + " http " + st + " body " + body)
	stream := calls[token]
	delete(calls, token)
	if r := proxySetEffectiveContext(stream); r != 0 {
		logf("set_effective_context " + u(r))
		return
	}
	if code != 0 {
		d, dn := sp("store_unavailable")
		proxySendLocalResponse(503, d, dn, nil, 0, nil, 0, -1)
		return
	}
	proxyContinueStream(0)
}
