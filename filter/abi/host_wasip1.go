//go:build wasip1

package abi

import "unsafe"

// wasmHost implements Host with the proxy-wasm imports. The module is single
// threaded and host calls do not nest, so the out-parameters and the
// encoding scratch buffer are package variables reused by every call.
//
// Its methods have pointer receivers and Host holds a *wasmHost: a method
// with a value receiver, called through an interface, goes through a
// compiler-made wrapper, one more call per host call, which in the VM
// costs a few hundred instructions.
type wasmHost struct{}

var (
	mem              allocator
	retData, retSize uint32
	retAux           uint32
	ret64            uint64
	scratch          []byte
)

const (
	emptyPairs           = "\x00\x00\x00\x00"
	errUnexpectedPointer = "tokenbudget abi: host returned memory it did not allocate"
)

func init() { host = &wasmHost{} }

var (
	_ ScratchReader = (*wasmHost)(nil)
	_ HeaderAdder   = (*wasmHost)(nil)
)

//go:wasmexport proxy_on_memory_allocate
func proxyOnMemoryAllocate(size uint32) unsafe.Pointer {
	// alloc keeps at least one byte of capacity, so even size 0 gets an
	// address of its own.
	return unsafe.Pointer(unsafe.SliceData(mem.alloc(int(size))))
}

// returned takes the buffer the last host call returned through
// retData/retSize, whatever its status, so no allocation stays pinned.
func returned(st uint32) ([]byte, Status) {
	b, ok := mem.take(uintptr(retData), int(retSize))
	retData, retSize = 0, 0
	if Status(st) != StatusOK {
		return nil, Status(st)
	}
	if !ok {
		proxyLog(uint32(LogError), errUnexpectedPointer)
		return nil, StatusInternalFailure
	}
	return b, StatusOK
}

// bytesArg passes b to the host as (pointer, length) without copying.
func bytesArg(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// bytesString hands a host-returned buffer over as a string without copying;
// the buffer is ours alone, so it is never written again.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (*wasmHost) Log(level LogLevel, msg string) { proxyLog(uint32(level), msg) }

func (*wasmHost) GetProperty(path ...string) ([]byte, Status) {
	scratch = scratch[:0]
	for i, p := range path {
		if i > 0 {
			scratch = append(scratch, 0)
		}
		scratch = append(scratch, p...)
	}
	return returned(proxyGetProperty(bytesArg(scratch), &retData, &retSize))
}

func (*wasmHost) SetFilterState(name string, value []byte) Status {
	return Status(proxySetProperty(name, bytesArg(value)))
}

func (*wasmHost) GetHeader(m MapType, name string) (string, Status) {
	b, st := returned(proxyGetHeaderMapValue(uint32(m), name, &retData, &retSize))
	return bytesString(b), st
}

// GetHeaderScratch implements ScratchReader.
func (h *wasmHost) GetHeaderScratch(m MapType, name string) (string, Status) {
	mem.reuse = true // returned() ends the scratch read
	return h.GetHeader(m, name)
}

func (*wasmHost) AddHeader(m MapType, name, value string) Status {
	return Status(proxyAddHeaderMapValue(uint32(m), name, value))
}

func (*wasmHost) ReplaceHeader(m MapType, name, value string) Status {
	return Status(proxyReplaceHeaderMapValue(uint32(m), name, value))
}

func (*wasmHost) RemoveHeader(m MapType, name string) Status {
	return Status(proxyRemoveHeaderMapValue(uint32(m), name))
}

func (h *wasmHost) GetHeaders(m MapType) ([][2]string, Status) { return h.AppendHeaders(nil, m) }

// AppendHeaders implements ScratchReader.
func (*wasmHost) AppendHeaders(dst [][2]string, m MapType) ([][2]string, Status) {
	b, st := returned(proxyGetHeaderMapPairs(uint32(m), &retData, &retSize))
	if st != StatusOK {
		return dst, st
	}
	pairs, ok := appendDecodedPairs(dst, b)
	if !ok {
		return dst, StatusSerializationFailure
	}
	return pairs, StatusOK
}

// AddHeaders implements HeaderAdder. The map is listed into the scratch
// buffer with room around it for add, and merged there in place when it
// holds none of add's names (see mergeInPlace); otherwise it is encoded
// afresh without them.
func (*wasmHost) AddHeaders(dst [][2]string, m MapType, add []Pair) ([][2]string, Status) {
	r := roomFor(add)
	before, after := r.before, r.after
	mem.reuse, mem.around = true, [2]int{before, after}
	b, st := returned(proxyGetHeaderMapPairs(uint32(m), &retData, &retSize))
	if st != StatusOK {
		return dst, st
	}
	var kept [][2]string
	var enc []byte
	ok := false
	if s := mem.scratch; len(b) > 0 && len(b) <= len(s)-before-after && &s[before] == &b[0] {
		kept, enc, ok = mergeInPlace(dst, s[:before+len(b)+after], len(b), add, r)
	}
	if !ok {
		listed, valid := appendDecodedPairs(nil, b)
		if !valid {
			return dst, StatusSerializationFailure
		}
		if kept, enc, ok = mergeFresh(dst, listed, add); !ok {
			return dst, StatusBadArgument
		}
	}
	if st := Status(proxySetHeaderMapPairs(uint32(m), bytesArg(enc))); st != StatusOK {
		return dst, st
	}
	return kept, StatusOK
}

func (*wasmHost) GetBuffer(b BufferType, start, maxSize int) ([]byte, Status) {
	if start < 0 || maxSize < 0 || start > maxUint32 || maxSize > maxUint32 {
		return nil, StatusBadArgument
	}
	return returned(proxyGetBufferBytes(uint32(b), uint32(start), uint32(maxSize), &retData, &retSize))
}

// GetBufferScratch implements ScratchReader.
func (*wasmHost) GetBufferScratch(b BufferType, start, maxSize int) ([]byte, Status) {
	if start < 0 || maxSize < 0 || start > maxUint32 || maxSize > maxUint32 {
		return nil, StatusBadArgument
	}
	mem.reuse = true // returned() ends the scratch read
	return returned(proxyGetBufferBytes(uint32(b), uint32(start), uint32(maxSize), &retData, &retSize))
}

func (*wasmHost) SetBuffer(b BufferType, start, size int, data []byte) Status {
	if start < 0 || size < 0 || start > maxUint32 || size > maxUint32 {
		return StatusBadArgument
	}
	return Status(proxySetBufferBytes(uint32(b), uint32(start), uint32(size), bytesArg(data)))
}

const maxUint32 = 1<<32 - 1

// noGRPCStatus tells Envoy the local response is not a gRPC one.
const noGRPCStatus = -1

func (*wasmHost) SendLocalResponse(status int, details string, body []byte, headers [][2]string) Status {
	if status < 0 || status > maxUint32 {
		return StatusBadArgument
	}
	scratch = AppendPairs(scratch[:0], headers)
	return Status(proxySendLocalResponse(uint32(status), details, bytesArg(body), bytesArg(scratch), noGRPCStatus))
}

func (*wasmHost) GetSharedData(key string) ([]byte, uint32, Status) {
	retAux = 0
	st := proxyGetSharedData(key, &retData, &retSize, &retAux)
	b, s := returned(st)
	return b, retAux, s
}

// GetSharedDataScratch implements ScratchReader.
func (h *wasmHost) GetSharedDataScratch(key string) ([]byte, uint32, Status) {
	mem.reuse = true // returned() ends the scratch read
	return h.GetSharedData(key)
}

func (*wasmHost) SetSharedData(key string, value []byte, cas uint32) Status {
	return Status(proxySetSharedData(key, bytesArg(value), cas))
}

func (*wasmHost) HTTPCall(cluster string, headers [][2]string, body []byte, timeoutMs uint32) (uint32, Status) {
	scratch = AppendPairs(scratch[:0], headers)
	retAux = 0
	st := proxyHTTPCall(cluster, bytesArg(scratch), bytesArg(body), emptyPairs, timeoutMs, &retAux)
	return retAux, Status(st)
}

func (*wasmHost) SetEffectiveContext(contextID uint32) Status {
	return Status(proxySetEffectiveContext(contextID))
}

func (*wasmHost) ContinueStream(s StreamType) Status { return Status(proxyContinueStream(uint32(s))) }

func (*wasmHost) SetTickPeriod(ms uint32) Status { return Status(proxySetTickPeriodMilliseconds(ms)) }

func (*wasmHost) NowNanos() int64 {
	ret64 = 0
	proxyGetCurrentTimeNanoseconds(&ret64)
	return int64(ret64)
}

func (*wasmHost) DefineMetric(t MetricType, name string) (uint32, Status) {
	retAux = 0
	st := proxyDefineMetric(uint32(t), name, &retAux)
	return retAux, Status(st)
}

func (*wasmHost) IncrementMetric(id uint32, delta int64) Status {
	return Status(proxyIncrementMetric(id, delta))
}

func (*wasmHost) RecordMetric(id uint32, v uint64) Status { return Status(proxyRecordMetric(id, v)) }

func (*wasmHost) GetMetric(id uint32) (uint64, Status) {
	ret64 = 0
	st := proxyGetMetric(id, &ret64)
	return ret64, Status(st)
}

func (*wasmHost) GetStatus() (uint32, string) {
	retAux = 0
	st := proxyGetStatus(&retAux, &retData, &retSize)
	msg, _ := returned(st)
	return retAux, bytesString(msg)
}
