//go:build wasip1

package abi

import "unsafe"

// The VM's environment, read through WASI as the Go runtime reads it, but by
// this package's own imports: os.Getenv would link syscall (see
// filter/imports_test.go). Envoy gives a VM only the variables of its
// vm_config.environment_variables (Istio: the WasmPlugin's vmConfig.env),
// which is how a secret reaches the filter without sitting in its config.

//go:wasmimport wasi_snapshot_preview1 environ_sizes_get
func environSizesGet(count unsafe.Pointer, size unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 environ_get
func environGet(ptrs unsafe.Pointer, buf unsafe.Pointer) uint32

var _ Environment = (*wasmHost)(nil)

// Getenv implements Environment. It asks the host afresh on each call (a
// config load, not a request, reads it), so a reload sees what the host
// gives then.
func (*wasmHost) Getenv(name string) (string, bool) {
	var count, size uint32
	if environSizesGet(unsafe.Pointer(&count), unsafe.Pointer(&size)) != 0 || count == 0 {
		return "", false
	}
	ptrs := make([]uint32, count)
	buf := make([]byte, size)
	if environGet(unsafe.Pointer(&ptrs[0]), unsafe.Pointer(unsafe.SliceData(buf))) != 0 {
		return "", false
	}
	return lookupEnv(buf, name)
}
