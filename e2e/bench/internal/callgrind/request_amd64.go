package callgrind

import (
	"runtime"
	"unsafe"
)

// clientRequest runs valgrind's magic instruction sequence with args, the
// request code and its five arguments; it returns the default 0 outside
// valgrind.
//
//go:noescape
func clientRequest(args *[6]uintptr) uintptr

func request(code, arg uintptr) {
	args := [6]uintptr{code, arg}
	clientRequest(&args)
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func keepAlive(b []byte) { runtime.KeepAlive(b) }
