// Package host is an Envoy-faithful proxy-wasm host on wazero: the project's stand-in for Envoy
// (there is no Envoy binary here), used by the filter's ABI tests, benchmarks and the local
// gateway (envoy/gateway). It follows Envoy + proxy-wasm-cpp-host as described in
// /work/shared/ENVOY_HOST.md; where it knowingly differs, the code says so in a comment.
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
// # What Envoy behaviour is reproduced
//
//   - Load: ABI marker required (0.2.1, 0.2.0, 0.1.0), malloc or proxy_on_memory_allocate
//     required, every import must exist in the chosen Profile ("missing import" otherwise).
//     ProfileLegacy offers exactly the 18 WASI functions of pre-mid-2026 Envoy (poll_oneoff =
//     ENOSYS, counted by PollOneoffCalls); ProfileCurrent adds the newer stubs.
//   - _initialize and the allocator run under cpp-host's restricted host-call lists (others trap).
//   - A canary VM validates every plugin config (New, Reload); one VM per worker with its own root
//     context; Reload keeps the VMs and creates new roots; old roots finish after their streams.
//   - Streams: context create on request headers; Envoy's header/body statuses and buffering
//     (Options.BufferLimit, default 1 MiB: 413 request / 500 response); headers read-only after
//     Continue; local replies run through the filter's own response callbacks like Envoy's
//     sendLocalReply; continue/close/local reply applied after the VM call.
//   - Callouts (proxy_http_call) use real HTTP to Options.Clusters; answers reach the root context
//     on the worker's VM, possibly after the stream is gone; failures are (0,0,0) with status 11.
//   - Shared data per vm_id across all workers with cpp-host's CAS rules; metrics as
//     wasmcustom.<name> with a Prometheus renderer applying stats_tags; properties; logs.
//   - Failure policies FailClosed (503 now and later), FailOpen (pass), FailReload (new VM on the
//     next stream); every trap is recorded in Traps and logged.
//
// Known differences: no trailers callbacks; no gRPC, queues or foreign functions
// (Unimplemented/NotFound); FAIL_RELOAD has no 1 s backoff; on_done returning false does not
// delay on_delete; local replies lack Envoy's date/server headers; a local reply the filter stops
// in its response callbacks is sent anyway (Envoy would stall).
package host
