package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// hopByHop are connection-level headers a proxy never forwards (RFC 9110 §7.6.1), as Envoy's codec
// strips them.
var hopByHop = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "te": true,
	"transfer-encoding": true, "upgrade": true, "proxy-authenticate": true, "proxy-authorization": true,
	"trailer": true,
}

// requestHeaders is the request header map Envoy hands a filter: pseudo-headers first, names
// lowercase, repeated inline headers (authorization among them) joined into one entry with ","
// and every other header one entry per line, plus what the connection manager adds before the
// filter chain (x-forwarded-proto, and x-request-id when the client sent none).
func requestHeaders(r *http.Request) host.Headers {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	hs := make(host.Headers, 0, len(r.Header)+6)
	hs = append(hs,
		[2]string{":authority", r.Host},
		[2]string{":path", r.URL.RequestURI()},
		[2]string{":method", r.Method},
		[2]string{":scheme", scheme},
	)
	hs = host.JoinRepeatedRequestHeaders(appendHeaders(hs, r.Header))
	if r.ContentLength > 0 && r.Header.Get("Content-Length") == "" {
		hs = append(hs, [2]string{"content-length", strconv.FormatInt(r.ContentLength, 10)})
	}
	hs = setHeader(hs, "x-forwarded-proto", scheme)
	if _, ok := hs.Get("x-request-id"); !ok {
		hs = append(hs, [2]string{"x-request-id", requestID()})
	}
	return hs
}

// responseHeaders is the upstream response as the filter sees it: :status first, then lowercase
// headers.
func responseHeaders(res *http.Response) host.Headers {
	hs := make(host.Headers, 0, len(res.Header)+1)
	hs = append(hs, [2]string{":status", strconv.Itoa(res.StatusCode)})
	return appendHeaders(hs, res.Header)
}

// appendHeaders adds h in sorted name order (Go's map has none; a stable order keeps tests and
// filters deterministic), dropping hop-by-hop headers.
func appendHeaders(hs host.Headers, h http.Header) host.Headers {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		lk := strings.ToLower(k)
		if hopByHop[lk] {
			continue
		}
		for _, v := range h[k] {
			hs = append(hs, [2]string{lk, v})
		}
	}
	return hs
}

func setHeader(hs host.Headers, name, value string) host.Headers {
	for i := range hs {
		if hs[i][0] == name {
			hs[i][1] = value
			return hs
		}
	}
	return append(hs, [2]string{name, value})
}

// copyOut writes a filter's header map into a Go header, skipping pseudo-headers and hop-by-hop
// ones.
func copyOut(dst http.Header, hs host.Headers) {
	for _, kv := range hs {
		if strings.HasPrefix(kv[0], ":") || hopByHop[kv[0]] {
			continue
		}
		dst[http.CanonicalHeaderKey(kv[0])] = append(dst[http.CanonicalHeaderKey(kv[0])], kv[1])
	}
}

// requestID is a random UUIDv4, like Envoy's generated x-request-id.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}
