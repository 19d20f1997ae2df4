// Command initalloc calls, from package init (inside _initialize), a host function that the
// host test registers, then sched_yield, which no profile allows during _initialize: whether
// that traps depends on whether the host allocated guest memory in between.
package main

import "unsafe"

func main() {}

//go:wasmimport env test_maybe_alloc
func testMaybeAlloc() uint32

//go:wasmimport wasi_snapshot_preview1 sched_yield
func schedYield() uint32

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

func init() {
	testMaybeAlloc()
	schedYield()
	msg := "init done"
	proxyLog(2, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}
