// Command pwrite imports wasi fd_pwrite, which only the current host profile provides.
package main

import "unsafe"

func main() {}

//go:wasmimport wasi_snapshot_preview1 fd_pwrite
func fdPwrite(fd uint32, iovs unsafe.Pointer, n uint32, off uint64, written *uint32) uint32

//go:wasmexport proxy_abi_version_0_2_1
func abiVersion() {}

//go:wasmexport proxy_on_memory_allocate
func memAlloc(size uint32) uint32 { return 0 }

//go:wasmexport proxy_on_context_create
func onContextCreate(id, parent uint32) {
	var w uint32
	fdPwrite(1, nil, 0, 0, &w)
}
