// Command wasistubs imports the WASI stubs cpp-host added in PR #533 (with cpp-host's
// signatures) and calls some of them from package init, where the current profile allows them;
// each request header callback runs the stub x-action names and logs its errno.
package main

import "unsafe"

func main() {}

//go:wasmimport env proxy_log
func proxyLog(level uint32, msg unsafe.Pointer, size uint32) uint32

//go:wasmimport env proxy_get_header_map_value
func proxyGetHeader(typ uint32, key unsafe.Pointer, keySize uint32, ptr *uint32, size *uint32) uint32

//go:wasmimport wasi_snapshot_preview1 clock_res_get
func clockResGet(id uint32, res *uint64) uint32

//go:wasmimport wasi_snapshot_preview1 poll_oneoff
func pollOneoff(in, out unsafe.Pointer, n uint32, nevents *uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_tell
func fdTell(fd uint32, off *uint64) uint32

//go:wasmimport wasi_snapshot_preview1 fd_pread
func fdPread(fd uint32, iovs unsafe.Pointer, n uint32, off uint64, nread *uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_pwrite
func fdPwrite(fd uint32, iovs unsafe.Pointer, n uint32, off uint64, written *uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_filestat_get
func fdFilestatGet(fd uint32, buf unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 path_filestat_get
func pathFilestatGet(fd, flags uint32, path unsafe.Pointer, pathLen uint32, buf unsafe.Pointer) uint32

//go:wasmimport wasi_snapshot_preview1 sock_accept
func sockAccept(fd, flags uint32, out *uint64) uint32

//go:wasmimport wasi_snapshot_preview1 sock_recv
func sockRecv(fd uint32, iovs unsafe.Pointer, n, flags uint32, nread *uint32, oflags *uint16) uint32

//go:wasmimport wasi_snapshot_preview1 sock_send
func sockSend(fd uint32, iovs unsafe.Pointer, n, flags uint32, nsent *uint32) uint32

//go:wasmimport wasi_snapshot_preview1 sock_shutdown
func sockShutdown(fd, how uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_readdir
func fdReaddir(fd uint32, buf unsafe.Pointer, n uint32, cookie uint64, nread *uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_advise
func fdAdvise(fd uint32, off, n uint64, advice uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_sync
func fdSync(fd uint32) uint32

//go:wasmimport wasi_snapshot_preview1 fd_renumber
func fdRenumber(fd, to uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_unlink_file
func pathUnlinkFile(fd uint32, path unsafe.Pointer, n uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_symlink
func pathSymlink(old unsafe.Pointer, oldLen, fd uint32, new unsafe.Pointer) uint32

//go:wasmexport proxy_abi_version_0_2_1
func abiVersion() {}

var keep [][]byte

//go:wasmexport proxy_on_memory_allocate
func memAlloc(size uint32) uint32 {
	b := make([]byte, size+1)
	keep = append(keep, b)
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

func logf(msg string) { proxyLog(2, unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg))) }

func u(n uint32) string {
	if n == 0 {
		return "0"
	}
	var b [10]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// Package init runs inside _initialize: the calls below are what the Go runtime and libraries
// may make there, which only the current profile allows.
func init() {
	var res uint64
	st := clockResGet(1, &res)
	var n uint32
	st2 := pollOneoff(nil, nil, 0, &n)
	var off uint64
	st3 := fdTell(1, &off)
	logf("init clock_res_get " + u(st) + " " + u(uint32(res)) + " poll_oneoff " + u(st2) + " fd_tell " + u(st3))
}

type iovec struct{ ptr, n uint32 }

func iov(s string) unsafe.Pointer {
	v := &iovec{uint32(uintptr(unsafe.Pointer(unsafe.StringData(s)))), uint32(len(s))}
	return unsafe.Pointer(v)
}

//go:wasmexport proxy_on_request_headers
func onRequestHeaders(id, nh, eos uint32) uint32 {
	var ptr, size uint32
	k := "x-action"
	proxyGetHeader(0, unsafe.Pointer(unsafe.StringData(k)), uint32(len(k)), &ptr, &size)
	action := ""
	if size > 0 {
		action = string(keep[len(keep)-1][:size])
	}
	var buf [64]byte
	var w uint32
	var w64 uint64
	var w16 uint16
	p := unsafe.Pointer(&buf[0])
	path := "x"
	pp := unsafe.Pointer(unsafe.StringData(path))
	var st uint32
	switch action {
	case "fd_filestat_get":
		st = fdFilestatGet(3, p)
	case "path_filestat_get":
		st = pathFilestatGet(3, 0, pp, 1, p)
	case "fd_pwrite 1":
		st = fdPwrite(1, iov("to stdout\n"), 1, 99, &w)
	case "fd_pwrite 2":
		st = fdPwrite(2, iov("to stderr"), 1, 0, &w)
	case "fd_pwrite 3":
		st = fdPwrite(3, iov("nowhere"), 1, 0, &w)
	case "fd_pread":
		st = fdPread(1, iov("x"), 1, 0, &w)
	case "fd_tell 3":
		st = fdTell(3, &w64)
	case "sock_accept":
		st = sockAccept(3, 0, &w64)
	case "sock_recv":
		st = sockRecv(3, iov("x"), 1, 0, &w, &w16)
	case "sock_send":
		st = sockSend(3, iov("x"), 1, 0, &w)
	case "sock_shutdown":
		st = sockShutdown(3, 0)
	case "fd_readdir":
		st = fdReaddir(3, p, 64, 0, &w)
	case "fd_advise":
		st = fdAdvise(7, 0, 0, 0)
	case "fd_sync":
		st = fdSync(7)
	case "fd_renumber":
		st = fdRenumber(1, 2)
	case "path_unlink_file":
		st = pathUnlinkFile(3, pp, 1)
	case "path_symlink":
		st = pathSymlink(pp, 1, 3, pp)
	}
	logf("errno " + action + " " + u(st) + " written " + u(w))
	return 0
}
