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
	errnoNotsup  = 58
)

// maxRandom is PROXY_WASM_HOST_WASI_RANDOM_GET_MAX_SIZE_BYTES.
const maxRandom = 64 << 10

// wasiFunctions is the WASI surface of one profile under one module name.
func wasiFunctions(module string, p Profile) []hostFn {
	var fns []hostFn
	add := func(name string, params []api.ValueType, results int, fn func(v *vm, s []uint64)) {
		fns = append(fns, hostFn{module: module, name: name, params: params, results: sig(results), fn: fn})
	}
	ret := func(errno uint64) func(*vm, []uint64) { return func(_ *vm, s []uint64) { s[0] = errno } }
	add("fd_write", sig(4), 1, wasiFdWrite)
	add("fd_read", sig(4), 1, ret(errnoNosys))
	add("fd_seek", []api.ValueType{i32, i64, i32, i32}, 1, func(v *vm, s []uint64) {
		v.h.addLog(v.worker, LevelError, module+" fd_seek")
		s[0] = errnoSuccess
	})
	add("fd_close", sig(1), 1, func(v *vm, s []uint64) {
		v.h.addLog(v.worker, LevelError, module+" fd_close")
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
		if !v.mem.Write(uint32(s[1]), st[:]) {
			s[0] = errnoFault
			return
		}
		s[0] = errnoSuccess
	})
	add("fd_fdstat_set_flags", sig(2), 1, ret(errnoNosys))
	add("environ_get", sig(2), 1, ret(errnoSuccess)) // Envoy passes vm_config.environment_variables; we have none
	add("environ_sizes_get", sig(2), 1, wasiZeroPair)
	add("args_get", sig(2), 1, ret(errnoSuccess))
	add("args_sizes_get", sig(2), 1, wasiZeroPair)
	add("clock_time_get", []api.ValueType{i32, i64, i32}, 1, wasiClockTimeGet)
	add("random_get", sig(2), 1, wasiRandomGet)
	add("sched_yield", nil, 1, ret(errnoSuccess))
	add("poll_oneoff", sig(4), 1, func(v *vm, s []uint64) {
		v.h.pollCalls.Add(1)
		if p == ProfileCurrent {
			// New cpp-host: succeed with no events.
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
		v.h.addLog(v.worker, LevelError, module+" proc_exit")
	})
	add("path_open", []api.ValueType{i32, i32, i32, i32, i32, i64, i64, i32, i32}, 1, ret(errnoNoent))
	add("fd_prestat_get", sig(2), 1, ret(errnoBadf))
	add("fd_prestat_dir_name", sig(3), 1, ret(errnoNosys))
	if p == ProfileCurrent {
		stub := func(name string) func(*vm, []uint64) {
			return func(v *vm, s []uint64) {
				v.h.addLog(v.worker, LevelError, module+" "+name)
				s[0] = errnoNosys
			}
		}
		add("fd_pwrite", []api.ValueType{i32, i32, i32, i64, i32}, 1, stub("fd_pwrite"))
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
		add("fd_filestat_get", sig(2), 1, stub("fd_filestat_get"))
		add("path_filestat_get", sig(5), 1, stub("path_filestat_get"))
	}
	return fns
}

func wasiZeroPair(v *vm, s []uint64) {
	if !v.putU32(uint32(s[0]), 0) || !v.putU32(uint32(s[1]), 0) {
		s[0] = errnoFault
		return
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
