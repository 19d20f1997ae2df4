package host

import (
	"net"
	"strconv"
	"strings"
)

// property resolves an Envoy attribute path (segments joined by NUL) for the effective context.
// Strings are raw, integers 8-byte little endian, timestamps int64 nanoseconds, maps in the pairs
// encoding.
func (v *vm) property(path string) ([]byte, bool) {
	switch path {
	case "plugin_name":
		return []byte(v.h.opts.PluginName), true
	case "plugin_root_id":
		return []byte(v.h.opts.RootID), true
	case "plugin_vm_id":
		return []byte(v.h.opts.VMID), true
	}
	var st *Stream
	if v.effective != nil && v.effective.stream != nil {
		st = v.effective.stream
	}
	if st == nil {
		return nil, false
	}
	if b, ok := st.props[path]; ok {
		return b, true
	}
	if b, ok := st.info.Properties[path]; ok {
		return b, true
	}
	seg := strings.Split(path, "\x00")
	req := st.req.headers
	get := func(h Headers, k string) ([]byte, bool) {
		val, ok := h.Get(k)
		return []byte(val), ok
	}
	switch seg[0] {
	case "source", "destination":
		addr := st.info.SourceAddress
		if seg[0] == "destination" {
			addr = st.info.DestinationAddress
		}
		if addr == "" || len(seg) != 2 {
			return nil, false
		}
		switch seg[1] {
		case "address":
			return []byte(addr), true
		case "port":
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, false
			}
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, false
			}
			return u64le(n), true
		}
	case "request":
		if len(seg) < 2 || !st.req.headersIn {
			return nil, false
		}
		switch seg[1] {
		case "path":
			return get(req, ":path")
		case "url_path":
			p, ok := req.Get(":path")
			if i := strings.IndexByte(p, '?'); i >= 0 {
				p = p[:i]
			}
			return []byte(p), ok
		case "query":
			p, ok := req.Get(":path")
			if !ok {
				return nil, false
			}
			if i := strings.IndexByte(p, '?'); i >= 0 {
				return []byte(p[i+1:]), true
			}
			return []byte{}, true
		case "host":
			return get(req, ":authority")
		case "method":
			return get(req, ":method")
		case "scheme":
			return get(req, ":scheme")
		case "id":
			if st.requestID == "" {
				return nil, false
			}
			return []byte(st.requestID), true
		case "protocol":
			return []byte("HTTP/1.1"), true
		case "time":
			return u64le(uint64(st.start.UnixNano())), true
		case "useragent":
			return get(req, "user-agent")
		case "referer":
			return get(req, "referer")
		case "headers":
			if len(seg) == 3 {
				return get(req, strings.ToLower(seg[2]))
			}
			return encodePairs(req), true
		}
	case "response":
		if len(seg) < 2 {
			return nil, false
		}
		switch seg[1] {
		case "code":
			if st.respCode != 0 {
				return u64le(uint64(st.respCode)), true
			}
			if s, ok := st.resp.headers.Get(":status"); ok {
				if n, err := strconv.Atoi(s); err == nil {
					return u64le(uint64(n)), true
				}
			}
			return nil, false
		case "code_details":
			if st.respDetails != "" {
				return []byte(st.respDetails), true
			}
			if st.resp.headersIn {
				return []byte("via_upstream"), true
			}
			return nil, false
		case "headers":
			if !st.resp.headersIn {
				return nil, false
			}
			if len(seg) == 3 {
				return get(st.resp.headers, strings.ToLower(seg[2]))
			}
			return encodePairs(st.resp.headers), true
		}
	}
	return nil, false
}

// FilterState returns what the filter stored under name with
// proxy_set_property: Envoy keeps it as filter state "wasm.<name>", which an
// access log prints with %FILTER_STATE(wasm.<name>:PLAIN)%. Read it once the
// stream is done (the filter may write it as late as on_log).
func (s *Stream) FilterState(name string) ([]byte, bool) {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	v, ok := s.props[name]
	return v, ok
}

func hostGetProperty(v *vm, s []uint64) {
	path, ok := v.readString(uint32(s[0]), uint32(s[1]))
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	val, found := v.property(path)
	if !found {
		s[0] = uint64(statusNotFound)
		return
	}
	s[0] = uint64(v.copyOut(val, uint32(s[2]), uint32(s[3])))
}

func hostSetProperty(v *vm, s []uint64) {
	path, ok1 := v.readString(uint32(s[0]), uint32(s[1]))
	val, ok2 := v.read(uint32(s[2]), uint32(s[3]))
	if !ok1 || !ok2 {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	st := v.effectiveStream()
	if st == nil {
		// Envoy stores properties in the stream's filter state; a root context has none.
		s[0] = uint64(statusNotFound)
		return
	}
	if st.props == nil {
		st.props = map[string][]byte{}
	}
	st.props[path] = append([]byte(nil), val...)
	s[0] = uint64(statusOK)
}
