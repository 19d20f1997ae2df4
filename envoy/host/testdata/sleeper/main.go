// Command sleeper links the time package (so Go's syscall init runs in _initialize) and sleeps in
// a callback, which makes the Go scheduler call poll_oneoff.
package main

import (
	"time"
	"unsafe"
)

func main() {}

//go:wasmimport env proxy_log
func proxyLog(level uint32, msg unsafe.Pointer, size uint32) uint32

//go:wasmexport proxy_abi_version_0_2_1
func abiVersion() {}

var keep [][]byte

//go:wasmexport proxy_on_memory_allocate
func memAlloc(size uint32) uint32 {
	b := make([]byte, size+1)
	keep = append(keep, b)
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(id, n, eos uint32) uint32 {
	time.Sleep(time.Millisecond)
	msg := "slept"
	proxyLog(2, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
	return 0
}
