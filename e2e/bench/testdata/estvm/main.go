// Command estvm runs the request estimator inside a WebAssembly VM and
// nothing else, so bench can measure the estimator's throughput in wazero
// without the proxy-wasm ABI, the host's buffering or the budget core.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared ./e2e/bench/testdata/estvm
package main

import (
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
)

func main() {}

// buf is the one input buffer; the host writes a body into it between
// alloc and parse.
var buf []byte

// alloc makes room for a body of size bytes and returns its address in
// linear memory.
//
//go:wasmexport alloc
func alloc(size uint32) uint32 {
	buf = make([]byte, size)
	if size == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

// parse runs estimate.Parse over the first n bytes of the buffer and
// returns the input estimate, or -1 when the body is not a JSON object.
//
//go:wasmexport parse
func parse(n uint32) int64 {
	if int(n) > len(buf) {
		return -1
	}
	r, err := estimate.Parse(buf[:n], 4096)
	if err != nil {
		return -1
	}
	return r.Input
}
