// Package host is an Envoy-faithful proxy-wasm host on wazero: the project's stand-in for Envoy
// (there is no Envoy binary here), used by the filter's ABI tests, benchmarks and the local
// gateway (envoy/gateway). It follows Envoy and proxy-wasm-cpp-host; where it knowingly
// differs, the list at the end of this comment says so, and whether Envoy or cpp-host decides.
//
// # Using it
//
//	h, err := host.New(ctx, host.Options{Module: wasm, PluginConfig: cfg, Workers: 2,
//	        Clusters: map[string]string{"sharedstore": "http://127.0.0.1:9000"}})
//	defer h.Close(ctx)
//	s := h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.0.0.7:51234"})
//	defer s.Done()                               // on_log, on_done, on_delete (once)
//	r := s.RequestHeaders(hdrs, false)           // hdrs: lowercase, with :method :path :authority
//	r = s.RequestBody(body, true)
//	if r.Action == host.Pause { r = s.Wait(ctx) } // the filter waits for a callout
//	switch r.Action {
//	case host.LocalReply: // send r.Local (Status, Headers incl. :status, Body)
//	case host.Close:      // reset the stream
//	default:              // forward r.Headers (if non-nil) and r.Body; r.EndOfStream marks the end
//	}
//
// Each Stream method returns what was released by that call: Headers is non-nil only when the
// filter let the headers go (possibly modified), Body is the bytes released now (a buffering
// filter releases everything at once, possibly rewritten). Pause means the filter holds the
// stream: keep feeding chunks you have; once you gave end of stream, call Wait. Callouts and
// ticks may release a paused stream from another goroutine; the next method call or Wait
// returns what they released.
//
// # Profiles: which Envoy
//
// Envoy embeds proxy-wasm-cpp-host ("cpp-host"), and what a module may import and call during
// start-up depends on the commit a given Envoy embeds. Options.Profile picks one (the
// TOKENBUDGET_HOST_PROFILE variable, read by ProfileFromEnv, lets a test suite run on each):
//
//   - ProfileLegacy ("legacy", the default and the strictest): the _initialize allow-list of
//     cpp-host before c4d7bb0 (PR #427, 2024-12-19) over c4d7bb0's 18 WASI functions, poll_oneoff
//     answering ENOSYS. It is a composite: the cpp-hosts with that list registered only 15 WASI
//     functions, and a standard-Go module (its runtime imports sched_yield and poll_oneoff) fails
//     to load there at all. A module that starts on legacy meets the start-up rules of every
//     Envoy a Go module loads in.
//   - ProfileEnvoy2025 ("envoy-2025"): cpp-host c4d7bb0, the generation Envoy embedded from 2025
//     until PR #45756: _initialize may also call fd_fdstat_get and fd_fdstat_set_flags.
//   - ProfileCurrent ("current"): cpp-host after 94091cd (PR #533, in Envoy since PR #45756,
//     2026-06-22): 45 WASI functions with cpp-host's signatures (path_link and path_symlink take
//     one argument fewer than WASI's, so a module importing WASI's gets "import type mismatch");
//     poll_oneoff answers 0 with no events; fd_filestat_get answers EBADF and path_filestat_get
//     ENOTSUP, silently; fd_pwrite to fds 1 and 2 writes like fd_write; _initialize may call
//     poll_oneoff, clock_res_get, emscripten_notify_memory_growth and the file and socket stubs
//     (not fd_read, fd_seek, fd_close, sched_yield, proc_exit or path_open); the allocator may
//     call poll_oneoff; __main_void runs after _initialize when there is no main.
//
// # What Envoy behaviour is reproduced
//
//   - Load: ABI marker required (0.2.1, 0.2.0, 0.1.0), malloc or proxy_on_memory_allocate
//     required, every import must exist in the chosen Profile with cpp-host's signature ("missing
//     import" or "import type mismatch" otherwise).
//   - _initialize and the allocator run under cpp-host's restricted host-call lists (others trap
//     with restricted_callback, as Envoy's default V8 engine enforces them; its WAMR and Wasmtime
//     engines do not). An allocation by the host during _initialize lifts the list for the rest
//     of it, as cpp-host's allocMemory does.
//   - A canary VM validates every plugin config (New, Reload); one VM per worker with its own root
//     context; Reload keeps the VMs and creates new roots; old roots finish after their streams.
//   - Streams: context create on request headers; Envoy's header/body statuses and buffering
//     (Options.BufferLimit, default 1 MiB: 413 request / 500 response); headers read-only after
//     Continue; local replies run through the filter's own response callbacks like Envoy's
//     sendLocalReply; continue/close/local reply applied after the VM call.
//   - proxy_send_local_response answers Ok whatever its header pairs hold (malformed pairs are no
//     headers) and turns the running callback's result into Stop (cpp-host stopNextIteration), so
//     nothing that callback returned Continue for leaves before the reply.
//   - Pairs everywhere (headers of a local reply, a callout, set_header_map_pairs) are read like
//     cpp-host's PairsUtil::toPairs: malformed, over 1 MiB or over 1024 pairs is an empty list.
//   - proxy_get_header_map_pairs of an empty map, and of a map that is not there (Envoy serves it
//     as empty), is Ok with pointer 0, size 0; proxy_get_buffer_bytes clamps its range and a
//     start past the end is Ok with pointer 0, size 0; map and buffer types past the last are
//     BadArgument.
//   - Callouts (proxy_http_call) use real HTTP to Options.Clusters; answers reach the root context
//     on the worker's VM, possibly after the stream is gone; failures are (0,0,0) with status 11.
//     Tokens are 4, 8, 12, ... per VM (cpp-host nextHttpCallId: the low two bits are the call
//     type).
//   - Shared data per vm_id across all workers with cpp-host's CAS rules; metrics as
//     wasmcustom.<name> with a Prometheus renderer applying stats_tags, with ids from one sequence
//     per type and VM (counters 4, 8, ..., gauges 5, 9, ..., histograms 6, 10, ...), a new id for
//     every definition, and the type read from an id's low bits; properties; logs.
//   - Failure policies FailClosed (503 now and later), FailOpen (pass), FailReload (new VM on the
//     next stream); every trap is recorded in Traps and logged.
//
// # Repeated request headers
//
// Envoy's header map joins a repeated inline request header into its first entry with ","
// (HeaderMapImpl::insertByKey and appendToHeader in source/common/http/header_map_impl.cc) and
// keeps every other repeated header as separate entries; proxy_get_header_map_value answers with
// the first entry only (Envoy's Context::getHeaderMapValue), proxy_get_header_map_pairs with every
// entry. The inline request headers are INLINE_REQ_HEADERS and INLINE_REQ_RESP_HEADERS of
// source/common/http/header_map_impl.h (:authority, :method, :path, :protocol, :scheme,
// connection, content-length, content-type, expect, grpc-timeout, keep-alive, proxy-connection,
// proxy-status, te, transfer-encoding, upgrade, user-agent, via, x-client-trace-id,
// x-forwarded-client-cert, x-forwarded-for, x-forwarded-host, x-forwarded-proto, x-request-id and
// the x-envoy-* request headers) plus authorization, which the oauth2 and cache filters register
// as a custom inline header (so every Envoy build containing them, upstream's included, joins
// it). x-api-key is not inline. A Stream takes the header map it is given as the map Envoy
// built; JoinRepeatedRequestHeaders turns header lines as they arrived into that map, and the
// local gateway (envoy/gateway) applies it to every request.
//
// # Known differences
//
// Where Envoy itself, not cpp-host, decides, the source is Envoy's:
//
//   - Repeated headers: headers that other compiled-in extensions register as inline (the cache
//     filter's pragma, cache-control and conditional headers), bootstrap inline_headers, and
//     cookie (joined with "; " when inline) are not joined here. The gateway hands headers of
//     different names to the filter in name order, not wire order (Go's http.Header keeps only
//     the order of one name's values).
//   - Local replies lack Envoy's date/server headers; a local reply the filter stops in its
//     response callbacks is sent anyway (Envoy's filter manager would stall it).
//   - No trailers callbacks; no gRPC, queues or foreign functions (Unimplemented/NotFound); no
//     ABI 0.1.0 proxy_get_configuration, proxy_continue_request/response or
//     proxy_clear_route_cache.
//   - environ_get answers Options.Env, sorted by name; cpp-host iterates Envoy's map of
//     vm_config.environment_variables in its own order. As in Envoy, a VM sees only those
//     variables (VMEnvironment builds them), never the process's environment.
//   - FAIL_RELOAD has no 1 s backoff (Envoy's wasm filter config); on_done returning false does
//     not delay on_delete (Envoy waits for proxy_done).
//   - Metrics live per Host; Envoy's stats store is process-wide.
//
// Where cpp-host decides:
//
//   - The profiles stand for three points of its history; the commits between c4d7bb0 and
//     94091cd that changed start-up (emscripten_notify_memory_growth allowed during _initialize,
//     2025-11, PR #461; __main_void called, 2026-03, PR #500) are given to ProfileCurrent only.
//   - AllowStdioInit lets fd_fdstat_get and fd_fdstat_set_flags through on ProfileLegacy, a
//     knowing divergence for modules that link Go's syscall package.
package host
