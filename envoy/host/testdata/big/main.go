// Command big links fmt and encoding/json so its size (~3.5 MB) is close to the real filter's,
// for the host creation benchmarks. Its stream callbacks do nothing.
package main

import (
	"encoding/json"
	"fmt"
	"unsafe"
)

func main() {}

//go:wasmexport proxy_abi_version_0_2_1
func abiVersion() {}

var keep [][]byte

//go:wasmexport proxy_on_memory_allocate
func memAlloc(size uint32) uint32 {
	b := make([]byte, size+1)
	keep = append(keep, b)
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

var sink string

//go:wasmexport proxy_on_configure
func onConfigure(id, size uint32) uint32 {
	var v map[string]any
	_ = json.Unmarshal([]byte(`{"a":1}`), &v)
	sink = fmt.Sprint(v)
	return 1
}

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(id, n, eos uint32) uint32 { return 0 }
