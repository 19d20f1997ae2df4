package host

// Buffer types of the proxy-wasm ABI.
const (
	bufRequestBody      = 0
	bufResponseBody     = 1
	bufHTTPCallRespBody = 4
	bufVMConfig         = 6
	bufPluginConfig     = 7

	// maxBufferType is WasmBufferType::MAX (CallData): a larger type is BadArgument, a known
	// type with nothing behind it NotFound.
	maxBufferType = 8
)

// buffer resolves a buffer type; the pointer is nil for read-only buffers.
func (v *vm) buffer(typ uint32) (data []byte, body *[]byte, ok bool) {
	switch typ {
	case bufRequestBody, bufResponseBody:
		st := v.effectiveStream()
		if st == nil {
			return nil, nil, false
		}
		d := &st.req
		if typ == bufResponseBody {
			d = &st.resp
		}
		if d.body == nil {
			return nil, nil, false
		}
		return d.body, &d.body, true
	case bufHTTPCallRespBody:
		if v.httpResp == nil {
			return nil, nil, false
		}
		return v.httpResp.body, &v.httpResp.body, true
	case bufVMConfig:
		// Envoy exposes the vm configuration during proxy_on_vm_start only.
		if !v.vmConfigVisible {
			return nil, nil, false
		}
		return v.h.opts.VMConfig, nil, true
	case bufPluginConfig:
		// ... and the plugin configuration during proxy_on_configure only.
		if v.pluginConfigVisible == nil {
			return nil, nil, false
		}
		return v.pluginConfigVisible, nil, true
	}
	return nil, nil, false
}

func hostGetBufferStatus(v *vm, s []uint64) {
	if uint32(s[0]) > maxBufferType {
		s[0] = uint64(statusBadArgument)
		return
	}
	data, _, ok := v.buffer(uint32(s[0]))
	if !ok {
		s[0] = uint64(statusNotFound)
		return
	}
	if !v.putU32(uint32(s[1]), uint32(len(data))) || !v.putU32(uint32(s[2]), 0) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(statusOK)
}

func hostGetBufferBytes(v *vm, s []uint64) {
	if uint32(s[0]) > maxBufferType {
		s[0] = uint64(statusBadArgument)
		return
	}
	data, _, ok := v.buffer(uint32(s[0]))
	if !ok {
		s[0] = uint64(statusNotFound)
		return
	}
	// cpp-host clamps rather than refuses: a start past the end reads nothing and answers Ok
	// with pointer 0, size 0.
	start, length := uint64(uint32(s[1])), uint64(uint32(s[2]))
	if start > uint64(len(data)) {
		start, length = 0, 0
	} else if start+length > uint64(len(data)) {
		length = uint64(len(data)) - start
	}
	s[0] = uint64(v.copyOut(data[start:start+length], uint32(s[3]), uint32(s[4])))
}

func hostSetBufferBytes(v *vm, s []uint64) {
	if uint32(s[0]) > maxBufferType {
		s[0] = uint64(statusBadArgument)
		return
	}
	_, body, ok := v.buffer(uint32(s[0]))
	if !ok || body == nil {
		s[0] = uint64(statusNotFound)
		return
	}
	start, length := uint32(s[1]), uint32(s[2])
	data, ok := v.read(uint32(s[3]), uint32(s[4]))
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	cur := *body
	switch {
	case start == 0:
		// Envoy: start 0 replaces the first `length` bytes with data.
		l := int(length)
		if l > len(cur) {
			l = len(cur)
		}
		nb := make([]byte, 0, len(data)+len(cur)-l)
		nb = append(nb, data...)
		nb = append(nb, cur[l:]...)
		*body = nb
	case int(start) >= len(cur):
		nb := make([]byte, 0, len(cur)+len(data))
		nb = append(nb, cur...)
		*body = append(nb, data...)
	default:
		s[0] = uint64(statusBadArgument)
		return
	}
	s[0] = uint64(statusOK)
}
