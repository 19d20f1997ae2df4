package host

import (
	"crypto/rand"
	"strings"

	"github.com/tetratelabs/wazero/api"
)

// WASI errno values used by Envoy's host.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoNoent   = 44
	errnoNosys   = 52
	// errnoNotdirCppHost is what cpp-host's fd_readdir answers for "not a directory": 20, not
	// WASI's ENOTDIR (54). The number is reproduced, since that is what a module sees.
	errnoNotdirCppHost = 20
	errnoNotsup        = 58
)

// maxRandom is PROXY_WASM_HOST_WASI_RANDOM_GET_MAX_SIZE_BYTES.
const maxRandom = 64 << 10

// wasiFunctions is the WASI surface of one profile under one module name, with cpp-host's
// signatures and answers (src/exports.cc of the commit each profile stands for).
func wasiFunctions(module string, p Profile) []hostFn {
	var fns []hostFn
	add := func(name string, params []api.ValueType, results int, fn func(v *vm, s []uint64)) {
		fns = append(fns, hostFn{module: module, name: name, params: params, results: sig(results), fn: fn})
	}
	ret := func(errno uint64) func(*vm, []uint64) { return func(_ *vm, s []uint64) { s[0] = errno } }
	add("fd_write", sig(4), 1, wasiFdWrite)
	add("fd_read", sig(4), 1, ret(errnoNosys))
	add("fd_seek", []api.ValueType{i32, i64, i32, i32}, 1, func(v *vm, s []uint64) {
		v.h.addLog(v.worker, LevelError, "wasi_unstable fd_seek")
		s[0] = errnoSuccess
	})
	add("fd_close", sig(1), 1, func(v *vm, s []uint64) {
		v.h.addLog(v.worker, LevelError, "wasi_unstable fd_close")
		s[0] = errnoSuccess
	})
	add("fd_fdstat_get", sig(2), 1, func(v *vm, s []uint64) {
		fd := uint32(s[0])
		if fd != 1 && fd != 2 {
			s[0] = errnoBadf
			return
		}
		var st [24]byte
		st[8] = 64 // fs_rights_base = FD_WRITE
		// cpp-host ignores a failed write here and answers success.
		v.mem.Write(uint32(s[1]), st[:])
		s[0] = errnoSuccess
	})
	add("fd_fdstat_set_flags", sig(2), 1, ret(errnoNosys))
	add("environ_get", sig(2), 1, wasiEnvironGet)
	add("environ_sizes_get", sig(2), 1, wasiEnvironSizesGet)
	add("args_get", sig(2), 1, ret(errnoSuccess))
	add("args_sizes_get", sig(2), 1, wasiZeroPair)
	add("clock_time_get", []api.ValueType{i32, i64, i32}, 1, wasiClockTimeGet)
	add("random_get", sig(2), 1, wasiRandomGet)
	add("sched_yield", nil, 1, ret(errnoSuccess))
	add("poll_oneoff", sig(4), 1, func(v *vm, s []uint64) {
		v.h.pollCalls.Add(1)
		if p == ProfileCurrent {
			// PR #533: succeed with no events, because the Go runtime dies on anything else.
			if !v.putU32(uint32(s[3]), 0) {
				s[0] = errnoFault
				return
			}
			s[0] = errnoSuccess
			return
		}
		s[0] = errnoNosys
	})
	add("proc_exit", sig(1), 0, func(v *vm, s []uint64) {
		// Envoy only logs; the guest continues (a Go runtime then reaches unreachable and traps).
		v.h.addLog(v.worker, LevelError, "wasi_unstable proc_exit")
	})
	add("path_open", []api.ValueType{i32, i32, i32, i32, i32, i64, i64, i32, i32}, 1, ret(errnoNoent))
	add("fd_prestat_get", sig(2), 1, ret(errnoBadf))
	add("fd_prestat_dir_name", sig(3), 1, ret(errnoNosys))
	if p != ProfileCurrent {
		return fns
	}
	// PR #533's stubs: 45 functions in all. Signatures are cpp-host's, not WASI's where they
	// differ (path_link and path_symlink take one argument fewer there), so a module importing
	// those with the WASI signature fails to load on this profile as it does in that Envoy.
	stdio := func(fd uint64) bool { return uint32(fd) == 1 || uint32(fd) == 2 }
	onStdio := func(errno uint64) func(*vm, []uint64) {
		return func(_ *vm, s []uint64) {
			if !stdio(s[0]) {
				s[0] = errnoBadf
				return
			}
			s[0] = errno
		}
	}
	add("clock_res_get", sig(2), 1, func(v *vm, s []uint64) {
		id := uint32(s[0])
		if id != 0 && id != 1 {
			s[0] = errnoNotsup
			return
		}
		if !v.putU64(uint32(s[1]), 1) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoSuccess
	})
	add("fd_advise", []api.ValueType{i32, i64, i64, i32}, 1, ret(errnoSuccess))
	add("fd_allocate", []api.ValueType{i32, i64, i64}, 1, onStdio(errnoSuccess))
	add("fd_datasync", sig(1), 1, onStdio(errnoSuccess))
	add("fd_fdstat_set_rights", []api.ValueType{i32, i64, i64}, 1, onStdio(errnoSuccess))
	add("fd_filestat_set_size", []api.ValueType{i32, i64}, 1, onStdio(errnoSuccess))
	add("fd_filestat_set_times", []api.ValueType{i32, i64, i64, i32}, 1, onStdio(errnoSuccess))
	add("fd_pread", []api.ValueType{i32, i32, i32, i64, i32}, 1, ret(errnoNosys))
	add("fd_pwrite", []api.ValueType{i32, i32, i32, i64, i32}, 1, func(v *vm, s []uint64) {
		// fds 1 and 2 are written like fd_write, the offset ignored.
		if !stdio(s[0]) {
			s[0] = errnoBadf
			return
		}
		s[3] = s[4]
		wasiFdWrite(v, s)
	})
	add("fd_readdir", []api.ValueType{i32, i32, i32, i64, i32}, 1, func(v *vm, s []uint64) {
		if !v.putU32(uint32(s[4]), 0) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoNotdirCppHost
	})
	add("fd_renumber", sig(2), 1, func(_ *vm, s []uint64) {
		if !stdio(s[0]) || !stdio(s[1]) {
			s[0] = errnoBadf
			return
		}
		s[0] = errnoNotsup
	})
	add("fd_sync", sig(1), 1, onStdio(errnoSuccess))
	add("fd_tell", sig(2), 1, func(v *vm, s []uint64) {
		if !stdio(s[0]) {
			s[0] = errnoBadf
			return
		}
		if !v.putU64(uint32(s[1]), 0) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoSuccess
	})
	add("path_create_directory", sig(3), 1, ret(errnoNotsup))
	add("path_filestat_set_times", []api.ValueType{i32, i32, i32, i32, i64, i64, i32}, 1, ret(errnoNotsup))
	add("path_link", sig(6), 1, ret(errnoNotsup))
	add("path_readlink", sig(6), 1, func(v *vm, s []uint64) {
		if !v.putU32(uint32(s[5]), 0) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoNotsup
	})
	add("path_remove_directory", sig(3), 1, ret(errnoNotsup))
	add("path_rename", sig(6), 1, ret(errnoNotsup))
	add("path_symlink", sig(4), 1, ret(errnoNotsup))
	add("path_unlink_file", sig(3), 1, ret(errnoNotsup))
	add("sock_accept", sig(3), 1, func(v *vm, s []uint64) {
		// cpp-host stores a 64-bit zero into the 32-bit fd slot.
		if !v.putU64(uint32(s[2]), 0) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoNotsup
	})
	add("sock_recv", sig(6), 1, func(v *vm, s []uint64) {
		if !v.putU32(uint32(s[4]), 0) || !v.mem.WriteUint16Le(uint32(s[5]), 0) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoNotsup
	})
	add("sock_send", sig(5), 1, func(v *vm, s []uint64) {
		if !v.putU32(uint32(s[4]), 0) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoNotsup
	})
	add("sock_shutdown", sig(2), 1, ret(errnoNotsup))
	// Silent, unlike the logging stubs above: EBADF and ENOTSUP without a log line.
	add("fd_filestat_get", sig(2), 1, ret(errnoBadf))
	add("path_filestat_get", sig(5), 1, ret(errnoNotsup))
	return fns
}

func wasiZeroPair(v *vm, s []uint64) {
	if !v.putU32(uint32(s[0]), 0) || !v.putU32(uint32(s[1]), 0) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

// wasiEnvironSizesGet answers the count of the VM's environment variables
// and the bytes of their "NAME=VALUE\0" strings, as cpp-host does from the
// variables Envoy built from vm_config.environment_variables.
func wasiEnvironSizesGet(v *vm, s []uint64) {
	size := 0
	for _, kv := range v.h.env {
		size += len(kv) + 1
	}
	if !v.putU32(uint32(s[0]), uint32(len(v.h.env))) || !v.putU32(uint32(s[1]), uint32(size)) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

// wasiEnvironGet writes each variable's address into the array at s[0] and
// its "NAME=VALUE\0" into the buffer at s[1], one after the other.
func wasiEnvironGet(v *vm, s []uint64) {
	ptrs, buf := uint32(s[0]), uint32(s[1])
	for _, kv := range v.h.env {
		if !v.putU32(ptrs, buf) || !v.mem.Write(buf, append([]byte(kv), 0)) {
			s[0] = errnoFault
			return
		}
		ptrs += 4
		buf += uint32(len(kv)) + 1
	}
	s[0] = errnoSuccess
}

func wasiFdWrite(v *vm, s []uint64) {
	fd, iovs, n, nwritten := uint32(s[0]), uint32(s[1]), uint32(s[2]), uint32(s[3])
	var level Level
	switch fd {
	case 1:
		level = LevelInfo
	case 2:
		level = LevelError
	default:
		s[0] = errnoBadf
		return
	}
	var sb strings.Builder
	for i := uint32(0); i < n; i++ {
		ptr, ok1 := v.mem.ReadUint32Le(iovs + i*8)
		ln, ok2 := v.mem.ReadUint32Le(iovs + i*8 + 4)
		if !ok1 || !ok2 {
			s[0] = errnoFault
			return
		}
		if ln == 0 {
			continue
		}
		b, ok := v.mem.Read(ptr, ln)
		if !ok {
			s[0] = errnoFault
			return
		}
		sb.Write(b)
	}
	msg := sb.String()
	written := len(msg)
	if written > 0 {
		msg = strings.TrimSuffix(msg, "\n")
		v.h.addLog(v.worker, level, msg)
	}
	if !v.putU32(nwritten, uint32(written)) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wasiClockTimeGet(v *vm, s []uint64) {
	var t uint64
	switch uint32(s[0]) {
	case 0:
		t = uint64(v.h.now().UnixNano())
	case 1:
		t = uint64(timeSince(v.h.mono))
	default:
		s[0] = errnoNotsup
		return
	}
	if !v.putU64(uint32(s[2]), t) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}

func wasiRandomGet(v *vm, s []uint64) {
	ptr, n := uint32(s[0]), uint32(s[1])
	if n > maxRandom {
		s[0] = errnoInval
		return
	}
	if n == 0 {
		s[0] = errnoSuccess
		return
	}
	buf := make([]byte, n)
	_, _ = rand.Read(buf)
	if !v.mem.Write(ptr, buf) {
		s[0] = errnoFault
		return
	}
	s[0] = errnoSuccess
}
