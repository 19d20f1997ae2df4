// Command wasisymlink imports path_symlink with WASI's own signature (five parameters, as Go's
// syscall package declares it); cpp-host registers it with four.
package main

import "unsafe"

func main() {}

//go:wasmimport wasi_snapshot_preview1 path_symlink
func pathSymlink(old unsafe.Pointer, oldLen, fd uint32, new unsafe.Pointer, newLen uint32) uint32

//go:wasmexport proxy_abi_version_0_2_1
func abiVersion() {}

//go:wasmexport proxy_on_memory_allocate
func memAlloc(size uint32) uint32 { return 0 }

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(id, n, eos uint32) uint32 {
	pathSymlink(nil, 0, 3, nil, 0)
	return 0
}
