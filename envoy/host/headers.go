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

func decodePairs(b []byte) (Headers, bool) {
	if len(b) == 0 {
		return nil, true
	}
	if len(b) < 4 {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n > (len(b)-4)/8 {
		return nil, false
	}
	out := make(Headers, 0, n)
	sizes := b[4:]
	data := b[4+8*n:]
	for i := 0; i < n; i++ {
		kl := int(binary.LittleEndian.Uint32(sizes[8*i:]))
		vl := int(binary.LittleEndian.Uint32(sizes[8*i+4:]))
		if kl < 0 || vl < 0 || kl+vl+2 > len(data) || kl+vl+2 < 0 {
			return nil, false
		}
		k := string(data[:kl])
		val := string(data[kl+1 : kl+1+vl])
		data = data[kl+vl+2:]
		out = append(out, [2]string{k, val})
	}
	return out, true
}

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
	var vals []string
	for _, kv := range *m {
		if kv[0] == key {
			vals = append(vals, kv[1])
		}
	}
	if len(vals) == 0 {
		s[0] = uint64(statusNotFound)
		return
	}
	// Envoy joins repeated headers with a comma.
	s[0] = uint64(v.copyOut([]byte(strings.Join(vals, ",")), uint32(s[3]), uint32(s[4])))
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
	m, _, ok := v.headerMap(uint32(s[0]))
	if !ok {
		s[0] = uint64(statusBadArgument)
		return
	}
	s[0] = uint64(v.copyOut(encodePairs(*m), uint32(s[1]), uint32(s[2])))
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
	pairs, ok := decodePairs(b)
	if !ok {
		s[0] = uint64(statusBadArgument)
		return
	}
	// Envoy removes every existing header, then adds the pairs.
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
