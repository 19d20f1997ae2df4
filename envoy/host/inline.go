package host

// inlineRequestHeaders are the request headers Envoy keeps as O(1) "inline" headers, the ones
// its header map joins when a request repeats them (HeaderMapImpl::insertByKey appends a repeated
// inline header to the first entry through appendToHeader): every name of INLINE_REQ_HEADERS and
// INLINE_REQ_RESP_HEADERS in source/common/http/header_map_impl.h (names from
// source/common/http/headers.h, with the default "x-envoy" prefix), plus "authorization", which
// the oauth2 and cache filters register as a custom inline request header
// (CustomInlineHeaderRegistry) and which is therefore inline in every Envoy build that contains
// them, upstream's release images included. Every other repeated header stays a separate entry.
//
// What this cannot know: headers other extensions compiled into a particular Envoy register
// (the cache filter also registers pragma, cache-control and the conditional request headers),
// and bootstrap inline_headers an operator adds; both are joined by that Envoy and not here.
var inlineRequestHeaders = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{
		// INLINE_REQ_STRING_HEADERS
		"x-client-trace-id", "x-envoy-downstream-service-cluster", "x-envoy-downstream-service-node",
		"x-envoy-external-address", "x-envoy-force-trace", "x-envoy-hedge-on-per-try-timeout",
		"x-envoy-internal", "x-envoy-ip-tags", "x-envoy-retry-on", "x-envoy-retry-grpc-on",
		"x-envoy-retriable-status-codes", "x-envoy-retriable-header-names", "x-envoy-original-path",
		"x-envoy-original-url", "x-envoy-upstream-alt-stat-name",
		"x-envoy-upstream-rq-timeout-alt-response", "expect", "x-forwarded-client-cert",
		"x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "grpc-timeout", ":authority",
		":method", ":path", ":protocol", ":scheme", "te", "user-agent",
		// INLINE_REQ_NUMERIC_HEADERS
		"x-envoy-expected-rq-timeout-ms", "x-envoy-max-retries", "x-envoy-upstream-rq-timeout-ms",
		"x-envoy-upstream-rq-per-try-timeout-ms", "x-envoy-upstream-stream-duration-ms",
		// INLINE_REQ_RESP_STRING_HEADERS and INLINE_REQ_RESP_NUMERIC_HEADERS
		"connection", "content-type", "x-envoy-decorator-operation", "keep-alive", "proxy-connection",
		"proxy-status", "x-request-id", "transfer-encoding", "upgrade", "via", "content-length",
		"x-envoy-attempt-count",
		// Custom inline request headers of the oauth2 and cache filters.
		"authorization",
	} {
		m[n] = true
	}
	return m
}()

// IsInlineRequestHeader reports whether Envoy joins repeats of the (lowercase) request header
// name into one comma-separated entry; see inlineRequestHeaders for where the list comes from.
func IsInlineRequestHeader(name string) bool { return inlineRequestHeaders[name] }

// JoinRepeatedRequestHeaders turns a request header list as it arrived on the wire (lowercase
// names, one entry per header line) into the map Envoy's codec builds from it: each repeated
// inline header becomes one entry, at its first position, whose values are joined with ","
// (empty values add nothing, and no delimiter follows an empty first value, as appendToHeader
// does); every other header keeps one entry per line, in order. In that map
// proxy_get_header_map_value finds the first entry only, proxy_get_header_map_pairs every entry.
func JoinRepeatedRequestHeaders(hs Headers) Headers {
	out := make(Headers, 0, len(hs))
	first := map[string]int{}
	for _, kv := range hs {
		if !inlineRequestHeaders[kv[0]] {
			out = append(out, kv)
			continue
		}
		i, seen := first[kv[0]]
		if !seen {
			first[kv[0]] = len(out)
			out = append(out, kv)
			continue
		}
		if kv[1] == "" {
			continue
		}
		if out[i][1] != "" {
			out[i][1] += ","
		}
		out[i][1] += kv[1]
	}
	return out
}
