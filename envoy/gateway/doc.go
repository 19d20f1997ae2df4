// Package gateway is the local stand-in for Envoy: an HTTP reverse proxy that runs the filter's
// .wasm through envoy/host exactly where Envoy's HTTP filter chain would, so the module can be
// tried, load-tested and end-to-end tested without an Envoy binary.
//
// For every client request it opens a host.Stream (source address = the client's), hands the
// filter the request headers (lowercase, with :authority :path :method :scheme, plus the
// x-request-id and x-forwarded-proto Envoy's connection manager adds; a repeated inline header
// such as authorization joined into one comma-separated entry and any other repeated header,
// x-api-key among them, kept as one entry per line, as Envoy's header map does: see
// host.JoinRepeatedRequestHeaders), then the body chunk by
// chunk; it honours Pause (keeps feeding, then Wait), local replies and resets, and forwards what
// the filter released to the upstream over a streaming http.Transport. The response goes the same
// way back: headers through the filter (which may add some), then each body chunk as it arrives,
// flushed at once so server-sent events stream. Whatever way the exchange ends (normal end,
// client gone, upstream reset, local reply) the stream gets Done, so the filter sees
// on_log/on_done/on_delete exactly once. An upstream that cannot be reached produces Envoy's 503
// "upstream connect error" reply, which, as in Envoy, passes through the filter's response path.
//
// The admin listener serves /stats/prometheus (the host's metrics with stats_tags applied,
// DefaultStatsTags unless configured), /ready, and POST /reload (re-read the config file, or use
// the request body when one is given, and apply it through the host's canary; a rejection
// answers 400 with the canary's error lines).
//
// Envoy's connection-manager defaults apply: request headers beyond 60 KiB (names and values,
// pseudo-headers included) get 431 before the filter sees them, and a stream on which nothing
// moves for StreamIdleTimeout (5 min) ends, with 408 "stream timeout" if no response started
// and a reset otherwise. A request body the filter buffers past BufferLimit (the command's
// --max-request-bytes, Envoy's per_connection_buffer_limit_bytes, 1 MiB) is refused with 413,
// as Envoy refuses it; where Envoy's body is the plain "Payload Too Large", the gateway's is a
// JSON error naming the limit and the flag, as the bootstraps' local_reply_config maps it. The
// VM's environment is VMEnv only (the command's --vm-env), as Envoy passes only its
// vm_config.environment_variables.
//
// Differences from Envoy worth knowing: one route to one upstream; no retries, route timeouts,
// trailers or HTTP/2 upstreams; the upstream request starts when the filter has released the headers and
// the first body bytes (or the end of stream), not at the headers alone, so a request refused
// while its body is held never reaches the backend; a body released whole is sent with its exact
// Content-Length, a streamed one with the released Content-Length or chunked.
package gateway
