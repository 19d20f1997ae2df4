package host

import (
	"encoding/binary"
	"strings"
)

// Header map types of the proxy-wasm ABI.
const (
	mapRequestHeaders       = 0
	mapRequestTrailers      = 1
	mapResponseHeaders      = 2
	mapResponseTrailers     = 3
	mapHTTPCallRespHeaders  = 6
	mapHTTPCallRespTrailers = 7
)

// encodePairs renders the proxy-wasm pairs format: count, then (key len, value len) per pair,
// then each key and value followed by NUL.
func encodePairs(h Headers) []byte {
	size := 4 + 8*len(h)
	for _, kv := range h {
		size += len(kv[0]) + len(kv[1]) + 2
	}
	b := make([]byte, size)
	binary.LittleEndian.PutUint32(b, uint32(len(h)))
	off := 4
	for _, kv := range h {
		binary.LittleEndian.PutUint32(b[off:], uint32(len(kv[0])))
		binary.LittleEndian.PutUint32(b[off+4:], uint32(len(kv[1])))
		off += 8
	}
	for _, kv := range h {
		off += copy(b[off:], kv[0])
		b[off] = 0
		off++
		off += copy(b[off:], kv[1])
		b[off] = 0
		off++
	}
	return b
}

// Limits of cpp-host's PairsUtil (include/proxy-wasm/limits.h).
const (
	maxPairsBytes = 1 << 20
	maxPairsCount = 1024
)

// decodePairs reads the pairs format as cpp-host's PairsUtil::toPairs does: anything malformed,
// over 1 MiB or over 1024 pairs, or with bytes left over, is an empty list, never an error. So a
// module that sends broken pairs gets the call answered as if it had sent none.
func decodePairs(b []byte) Headers {
	if len(b) < 4 || len(b) > maxPairsBytes {
		return nil
	}
	n := uint64(binary.LittleEndian.Uint32(b))
	if n == 0 || n > maxPairsCount || 4+8*n > uint64(len(b)) {
		return nil
	}
	out := make(Headers, 0, n)
	sizes := b[4:]
	data := b[4+8*n:]
	for i := uint64(0); i < n; i++ {
		kl := uint64(binary.LittleEndian.Uint32(sizes[8*i:]))
		vl := uint64(binary.LittleEndian.Uint32(sizes[8*i+4:]))
		if kl+1 > uint64(len(data)) || data[kl] != 0 {
			return nil
		}
		k := string(data[:kl])
		data = data[kl+1:]
		if vl+1 > uint64(len(data)) || data[vl] != 0 {
			return nil
		}
		val := string(data[:vl])
		data = data[vl+1:]
		out = append(out, [2]string{k, val})
	}
	if len(data) != 0 {
		return nil
	}
	return out
}

// maxHeaderMapType is WasmHeaderMapType::MAX (HttpCallResponseTrailers): a larger type is
// BadArgument before anything else is looked at.
const maxHeaderMapType = mapHTTPCallRespTrailers

// headerMap resolves a map type for the effective context. writable is false in the access-log
// phase (Envoy hands on_log const maps).
func (v *vm) headerMap(typ uint32) (m *Headers, writable bool, ok bool) {
	switch typ {
	case mapHTTPCallRespHeaders, mapHTTPCallRespTrailers:
		if v.httpResp == nil {
			return nil, false, false
		}
		if typ == mapHTTPCallRespHeaders {
			return &v.httpResp.headers, true, true
		}
		return &v.httpResp.trailers, true, true
	case mapRequestHeaders, mapRequestTrailers, mapResponseHeaders, mapResponseTrailers:
	default:
		return nil, false, false
	}
	st := v.effectiveStream()
	if st == nil {
		return nil, false, false
	}
	d := &st.req
	if typ >= mapResponseHeaders {
		d = &st.resp
	}
	trailers := typ == mapRequestTrailers || typ == mapResponseTrailers
	if st.inLog {
		if trailers {
			return &d.trailers, false, true
		}
		return &d.headers, false, true
	}
	if trailers {
		if !d.trailersOpen {
			return nil, false, false
		}
		return &d.trailers, true, true
	}
	if !d.headersOpen {
		return nil, false, false
	}
	return &d.headers, true, true
}

func hostGetHeaderMapValue(v *vm, s []uint64) {
	m, _, ok := v.headerMap(uint32(s[0]))
	if !ok {
		s[0] = uint64(statusBadArgument)
		return
	}
	key, ok := v.readString(uint32(s[1]), uint32(s[2]))
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	key = strings.ToLower(key)
	// Envoy answers with the first entry only (Context::getHeaderMapValue, entry[0]): repeated
	// headers it did not join when the request arrived stay invisible here, and only
	// proxy_get_header_map_pairs shows them.
	for _, kv := range *m {
		if kv[0] == key {
			s[0] = uint64(v.copyOut([]byte(kv[1]), uint32(s[3]), uint32(s[4])))
			return
		}
	}
	if v.h.abi == "0.1.0" {
		// ABI 0.1.0 modules get an empty value rather than NotFound.
		s[0] = uint64(v.copyOut(nil, uint32(s[3]), uint32(s[4])))
		return
	}
	s[0] = uint64(statusNotFound)
}

func readKV(v *vm, s []uint64) (string, string, bool) {
	k, ok1 := v.readString(uint32(s[1]), uint32(s[2]))
	val, ok2 := v.readString(uint32(s[3]), uint32(s[4]))
	return strings.ToLower(k), val, ok1 && ok2
}

func hostAddHeaderMapValue(v *vm, s []uint64) {
	m, w, ok := v.headerMap(uint32(s[0]))
	if !ok || !w {
		s[0] = uint64(statusBadArgument)
		return
	}
	k, val, ok := readKV(v, s)
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	*m = append(*m, [2]string{k, val})
	s[0] = uint64(statusOK)
}

func hostReplaceHeaderMapValue(v *vm, s []uint64) {
	m, w, ok := v.headerMap(uint32(s[0]))
	if !ok || !w {
		s[0] = uint64(statusBadArgument)
		return
	}
	k, val, ok := readKV(v, s)
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	m.set(k, val)
	s[0] = uint64(statusOK)
}

// set replaces every value of k with one value, keeping the position of the first occurrence.
func (h *Headers) set(k, val string) {
	out := (*h)[:0]
	found := false
	for _, kv := range *h {
		if kv[0] == k {
			if found {
				continue
			}
			found = true
			kv[1] = val
		}
		out = append(out, kv)
	}
	if !found {
		out = append(out, [2]string{k, val})
	}
	*h = out
}

func (h *Headers) del(k string) {
	out := (*h)[:0]
	for _, kv := range *h {
		if kv[0] != k {
			out = append(out, kv)
		}
	}
	*h = out
}

func hostRemoveHeaderMapValue(v *vm, s []uint64) {
	m, w, ok := v.headerMap(uint32(s[0]))
	if !ok || !w {
		s[0] = uint64(statusBadArgument)
		return
	}
	k, ok := v.readString(uint32(s[1]), uint32(s[2]))
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	m.del(strings.ToLower(k))
	s[0] = uint64(statusOK)
}

func hostGetHeaderMapPairs(v *vm, s []uint64) {
	typ := uint32(s[0])
	if typ > maxHeaderMapType {
		s[0] = uint64(statusBadArgument)
		return
	}
	// Envoy serves a map it cannot reach (headers already continued, gRPC metadata) as an empty
	// one, and cpp-host hands an empty list back as pointer 0, size 0, allocating nothing.
	var pairs Headers
	if m, _, ok := v.headerMap(typ); ok {
		pairs = *m
	}
	if len(pairs) == 0 {
		s[0] = uint64(v.copyOut(nil, uint32(s[1]), uint32(s[2])))
		return
	}
	s[0] = uint64(v.copyOut(encodePairs(pairs), uint32(s[1]), uint32(s[2])))
}

func hostSetHeaderMapPairs(v *vm, s []uint64) {
	m, w, ok := v.headerMap(uint32(s[0]))
	if !ok || !w {
		s[0] = uint64(statusBadArgument)
		return
	}
	b, ok := v.read(uint32(s[1]), uint32(s[2]))
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	// Envoy removes every existing header, then adds the pairs (none, when they are malformed).
	pairs := decodePairs(b)
	*m = (*m)[:0]
	for _, kv := range pairs {
		*m = append(*m, [2]string{strings.ToLower(kv[0]), kv[1]})
	}
	s[0] = uint64(statusOK)
}

func hostGetHeaderMapSize(v *vm, s []uint64) {
	m, _, ok := v.headerMap(uint32(s[0]))
	if !ok {
		s[0] = uint64(statusBadArgument)
		return
	}
	n := 0
	for _, kv := range *m {
		n += len(kv[0]) + len(kv[1])
	}
	if !v.putU32(uint32(s[1]), uint32(n)) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(statusOK)
}
