package host

import (
	"github.com/tetratelabs/wazero/api"
)

// proxy-wasm status codes (WasmResult).
const (
	statusOK                  uint32 = 0
	statusNotFound            uint32 = 1
	statusBadArgument         uint32 = 2
	statusSerializationFailed uint32 = 3
	statusParseFailure        uint32 = 4
	statusInvalidMemoryAccess uint32 = 6
	statusEmpty               uint32 = 7
	statusCasMismatch         uint32 = 8
	statusInternalFailure     uint32 = 10
	statusBrokenConnection    uint32 = 11
	statusUnimplemented       uint32 = 12
)

// hostFn is one import the host offers, with where it may be called from.
type hostFn struct {
	module, name    string
	params, results []api.ValueType
	fn              func(v *vm, stack []uint64)
	initOK, allocOK bool
}

var (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

func sig(n int) []api.ValueType {
	out := make([]api.ValueType, n)
	for i := range out {
		out[i] = i32
	}
	return out
}

// hostFunctions lists every import a module may use for this ABI version and profile; anything
// else is a "missing import" load error, as in Envoy.
func hostFunctions(abi string, p Profile) []hostFn {
	var fns []hostFn
	env := func(name string, nparams int, fn func(v *vm, s []uint64)) {
		fns = append(fns, hostFn{module: "env", name: name, params: sig(nparams), results: sig(1), fn: fn})
	}
	env("proxy_log", 3, hostLog)
	env("proxy_get_status", 3, hostGetStatus)
	env("proxy_set_property", 4, hostSetProperty)
	env("proxy_get_property", 4, hostGetProperty)
	env("proxy_send_local_response", 8, hostSendLocalResponse)
	env("proxy_get_shared_data", 5, hostGetSharedData)
	env("proxy_set_shared_data", 5, hostSetSharedData)
	env("proxy_register_shared_queue", 3, unimplemented)
	env("proxy_resolve_shared_queue", 5, unimplemented)
	env("proxy_dequeue_shared_queue", 3, unimplemented)
	env("proxy_enqueue_shared_queue", 3, unimplemented)
	env("proxy_get_header_map_value", 5, hostGetHeaderMapValue)
	env("proxy_add_header_map_value", 5, hostAddHeaderMapValue)
	env("proxy_replace_header_map_value", 5, hostReplaceHeaderMapValue)
	env("proxy_remove_header_map_value", 3, hostRemoveHeaderMapValue)
	env("proxy_get_header_map_pairs", 3, hostGetHeaderMapPairs)
	env("proxy_set_header_map_pairs", 3, hostSetHeaderMapPairs)
	env("proxy_get_header_map_size", 2, hostGetHeaderMapSize)
	env("proxy_get_buffer_status", 3, hostGetBufferStatus)
	env("proxy_get_buffer_bytes", 5, hostGetBufferBytes)
	env("proxy_set_buffer_bytes", 5, hostSetBufferBytes)
	env("proxy_http_call", 10, hostHTTPCall)
	env("proxy_grpc_call", 12, unimplemented)
	env("proxy_grpc_stream", 9, unimplemented)
	env("proxy_grpc_close", 1, unimplemented)
	env("proxy_grpc_cancel", 1, unimplemented)
	env("proxy_grpc_send", 4, unimplemented)
	env("proxy_set_tick_period_milliseconds", 1, hostSetTickPeriod)
	env("proxy_get_current_time_nanoseconds", 1, hostGetCurrentTime)
	env("proxy_define_metric", 4, hostDefineMetric)
	fns = append(fns,
		hostFn{module: "env", name: "proxy_increment_metric", params: []api.ValueType{i32, i64}, results: sig(1), fn: hostIncrementMetric},
		hostFn{module: "env", name: "proxy_record_metric", params: []api.ValueType{i32, i64}, results: sig(1), fn: hostRecordMetric},
	)
	env("proxy_get_metric", 2, hostGetMetric)
	env("proxy_set_effective_context", 1, hostSetEffectiveContext)
	env("proxy_done", 0, hostDone)
	env("proxy_call_foreign_function", 6, hostCallForeign)
	if abi == "0.2.0" || abi == "0.2.1" {
		env("proxy_continue_stream", 1, hostContinueStream)
		env("proxy_close_stream", 1, hostCloseStream)
	}
	if abi == "0.2.1" {
		env("proxy_get_log_level", 1, hostGetLogLevel)
	}
	env("pthread_equal", 2, func(_ *vm, s []uint64) {
		if uint32(s[0]) == uint32(s[1]) {
			s[0] = 1
		} else {
			s[0] = 0
		}
	})
	fns = append(fns, hostFn{module: "env", name: "emscripten_notify_memory_growth", params: sig(1), fn: func(*vm, []uint64) {}})
	env("envoy_resolve_dns", 3, unimplemented)

	for _, m := range []string{"wasi_snapshot_preview1", "wasi_unstable"} {
		fns = append(fns, wasiFunctions(m, p)...)
	}
	initOK, allocOK := restrictedLists(p)
	for i := range fns {
		f := &fns[i]
		key := f.name
		if f.module == "env" {
			key = "env." + f.name
		}
		f.initOK = initOK[key]
		f.allocOK = allocOK[key]
	}
	return fns
}

// restrictedLists are the host calls cpp-host allows while _initialize (and main) run, in
// WasmBase::startVm, and while the host runs the module's allocator, in WasmBase::allocMemory;
// anything else traps there with "restricted_callback" (enforced by the V8 engine, Envoy's
// default). WASI names stand for both wasi_snapshot_preview1 and wasi_unstable; env names carry
// their module.
func restrictedLists(p Profile) (initOK, allocOK map[string]bool) {
	set := func(names ...string) map[string]bool {
		m := make(map[string]bool, len(names))
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	// Before c4d7bb0.
	initOK = set("env.proxy_log", "fd_write", "args_sizes_get", "args_get", "environ_sizes_get",
		"environ_get", "fd_prestat_get", "fd_prestat_dir_name", "clock_time_get", "random_get")
	allocOK = set("env.proxy_log", "fd_write", "clock_time_get")
	if p == ProfileLegacy {
		return initOK, allocOK
	}
	// c4d7bb0: Go runtime initialization.
	initOK["fd_fdstat_get"], initOK["fd_fdstat_set_flags"] = true, true
	if p == ProfileEnvoy2025 {
		return initOK, allocOK
	}
	// 94091cd (and #461 before it, for emscripten_notify_memory_growth). Not on the list:
	// fd_read, fd_seek, fd_close, sched_yield, proc_exit, path_open.
	for _, n := range []string{"env.emscripten_notify_memory_growth", "clock_res_get", "poll_oneoff",
		"fd_advise", "fd_allocate", "fd_datasync", "fd_fdstat_set_rights", "fd_filestat_get",
		"fd_filestat_set_size", "fd_filestat_set_times", "fd_pread", "fd_pwrite", "fd_readdir",
		"fd_renumber", "fd_sync", "fd_tell", "path_create_directory", "path_filestat_get",
		"path_filestat_set_times", "path_link", "path_readlink", "path_remove_directory",
		"path_rename", "path_symlink", "path_unlink_file", "sock_accept", "sock_recv", "sock_send",
		"sock_shutdown"} {
		initOK[n] = true
	}
	// Go's garbage collector may sleep inside malloc.
	allocOK["poll_oneoff"] = true
	return initOK, allocOK
}

func unimplemented(_ *vm, s []uint64) { s[0] = uint64(statusUnimplemented) }
