package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// chunkSize is the most the proxy reads per body callback; a read returns as soon as some bytes
// are there, so streamed events reach the filter and the client one by one.
const chunkSize = 32 << 10

// bufPool recycles chunk buffers: the host copies what it keeps, so a buffer is free again as soon
// as a callback returns.
var bufPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// upstreamConnectError is Envoy's body for a request whose upstream could not be reached.
const upstreamConnectError = "upstream connect error or disconnect/reset before headers. reset reason: connection failure"

// ServeHTTP proxies one request through the filter to the upstream.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	hs := requestHeaders(r)
	if headerBytes(hs) > g.cfg.MaxRequestHeadersBytes {
		// Envoy's codec refuses such a request before any filter sees it.
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestHeaderFieldsTooLarge)
		_, _ = io.WriteString(w, "Request Header Fields Too Large")
		g.access.write(r, http.StatusRequestHeaderFieldsTooLarge, time.Since(start), nil)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	x := &exchange{g: g, w: w, rc: http.NewResponseController(w), r: r, ctx: ctx}
	if d := g.cfg.StreamIdleTimeout; d > 0 {
		x.idle = time.AfterFunc(d, func() {
			x.idleMu.Lock()
			defer x.idleMu.Unlock()
			if x.idleOver {
				return // the exchange ended first
			}
			x.idleFired = true
			_ = x.rc.SetReadDeadline(time.Now())  // wakes a blocked read of the client's body,
			_ = x.rc.SetWriteDeadline(time.Now()) // a write to a client that does not read,
			cancel()                              // and the upstream round trip, and any Wait
		})
	}
	x.s = g.host.NewStream(host.StreamInfo{Worker: -1, SourceAddress: r.RemoteAddr, DestinationAddress: localAddr(r)})
	x.run(hs)
	if x.idle != nil {
		x.idle.Stop()
		x.idleMu.Lock()
		x.idleOver = true
		fired := x.idleFired
		x.idleMu.Unlock()
		if fired {
			x.idleTimeout()
		}
	}
	cancel() // whatever is still talking to the upstream stops now
	x.cleanup()
	x.s.Done()
	if g.access != nil {
		decision, _ := x.s.FilterState(FilterStateName)
		status := x.status
		if x.reset {
			status = 0 // the stream was reset: no complete answer reached the client
		}
		g.access.write(r, status, time.Since(start), decision)
	}
	if x.reset {
		// Reset the downstream connection, as Envoy resets a stream it cannot finish.
		panic(http.ErrAbortHandler)
	}
}

func localAddr(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return ""
}

// exchange is the state of one proxied request, used from the handler goroutine only (the
// upstream round trip runs beside it and reports through upCh).
type exchange struct {
	g   *Gateway
	s   *host.Stream
	w   http.ResponseWriter
	rc  *http.ResponseController
	r   *http.Request
	ctx context.Context

	heldHeaders           host.Headers // released by the filter, sent with the first body bytes
	upStarted, upConsumed bool
	upCh                  chan upstreamResult
	pw                    *io.PipeWriter // request body to the upstream, when streamed
	reqPaused             bool

	wroteHeaders bool
	status       int    // the status written to the client, 0 until then
	pending      []byte // response body released before the headers could be written (defensive)
	respPaused   bool
	reset        bool

	idle      *time.Timer // Config.StreamIdleTimeout, pushed back whenever a byte moves
	idleMu    sync.Mutex  // orders the timer against the end of the exchange
	idleFired bool        // the timer cut the exchange off
	idleOver  bool        // the exchange ended; a late timer does nothing
}

// active pushes the stream idle timeout back: a byte moved.
func (x *exchange) active() {
	if x.idle != nil {
		x.idle.Reset(x.g.cfg.StreamIdleTimeout) // a timer that already fired has cut the exchange off
	}
}

// idleTimeout ends a stream on which nothing moved for StreamIdleTimeout as Envoy does: 408
// "stream timeout" when no response has started, a reset otherwise.
func (x *exchange) idleTimeout() {
	if x.wroteHeaders {
		x.reset = true
		return
	}
	const body = "stream timeout"
	_ = x.rc.SetWriteDeadline(time.Time{}) // the timer cut writes off; this answer must get out
	h := x.w.Header()
	h.Set("Content-Type", "text/plain")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Connection", "close")
	x.w.WriteHeader(http.StatusRequestTimeout)
	x.wroteHeaders = true
	_, _ = io.WriteString(x.w, body)
}

// headerBytes is the size Envoy's max_request_headers_kb limits: every name and value, the
// pseudo-headers included.
func headerBytes(hs host.Headers) int {
	n := 0
	for _, kv := range hs {
		n += len(kv[0]) + len(kv[1])
	}
	return n
}

type upstreamResult struct {
	res *http.Response
	err error
}

func (x *exchange) run(hs host.Headers) {
	hasBody := x.r.Body != nil && x.r.Body != http.NoBody && x.r.ContentLength != 0
	if !x.request(x.s.RequestHeaders(hs, !hasBody)) {
		return
	}
	if hasBody && !x.pumpRequestBody() {
		return
	}
	for x.reqPaused {
		res := x.s.Wait(x.ctx)
		if x.ctx.Err() != nil {
			return
		}
		if !x.request(res) {
			return
		}
	}
	if !x.upStarted && x.heldHeaders != nil {
		x.startUpstream(x.heldHeaders, nil, true)
	}
	if !x.upStarted {
		x.writeLocal(&host.LocalResponse{Status: http.StatusInternalServerError, Body: []byte("gateway: the filter released no request headers")})
		return
	}
	var u upstreamResult
	select {
	case u = <-x.upCh:
		x.upConsumed = true
	case <-x.ctx.Done():
		return
	}
	if u.err != nil {
		if x.ctx.Err() != nil {
			return
		}
		x.g.log.Warn("gateway: upstream", "err", u.err)
		body := upstreamConnectError
		x.respond(host.Headers{{":status", "503"}, {"content-length", strconv.Itoa(len(body))},
			{"content-type", "text/plain"}}, strings.NewReader(body), false)
		return
	}
	defer u.res.Body.Close()
	x.respond(responseHeaders(u.res), u.res.Body, bodyless(x.r, u.res))
}

func bodyless(req *http.Request, res *http.Response) bool {
	return req.Method == http.MethodHead || res.StatusCode == http.StatusNoContent ||
		res.StatusCode == http.StatusNotModified || res.ContentLength == 0
}

// pumpRequestBody feeds the client's body to the filter chunk by chunk; false when the exchange
// is over (client gone, local reply, reset).
func (x *exchange) pumpRequestBody() bool {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	// No chunk exceeds the buffer limit: Envoy stops reading a connection once its buffer limit
	// is reached, so a body larger than the limit reaches a filter that buffers it in more than
	// one piece and is refused with 413, however the client's bytes arrived. Read whole, a body
	// that came in one read would slip past the limit here.
	buf := (*bp)[:min(len(*bp), x.g.cfg.BufferLimit)]
	for {
		n, err := x.r.Body.Read(buf)
		eos := errors.Is(err, io.EOF)
		if err != nil && !eos {
			return false // the client went away mid-body (or went idle): the stream ends without end of stream
		}
		x.active()
		if n == 0 && !eos {
			continue
		}
		if !x.request(x.s.RequestBody(buf[:n], eos)) {
			return false
		}
		if eos {
			return true
		}
	}
}

// request applies one filter result of the request direction.
func (x *exchange) request(res host.Result) bool {
	switch res.Action {
	case host.LocalReply:
		x.writeLocal(res.Local)
		return false
	case host.Close:
		x.reset = true
		return false
	}
	if res.Headers != nil && !x.upStarted {
		x.heldHeaders = res.Headers
	}
	switch {
	case x.heldHeaders != nil && !x.upStarted && (len(res.Body) > 0 || res.EndOfStream):
		x.startUpstream(x.heldHeaders, res.Body, res.EndOfStream)
	case len(res.Body) > 0 && x.pw != nil:
		// A failed write means the round trip already failed; its error arrives on upCh.
		_, _ = x.pw.Write(res.Body)
	}
	if res.EndOfStream && x.pw != nil {
		_ = x.pw.Close()
	}
	x.reqPaused = res.Action == host.Pause
	return true
}

// startUpstream sends the released request upstream. It runs when the filter has released the
// headers and then some body bytes or the end of stream. Envoy's router would already connect
// at the headers; waiting costs nothing the backend could use (it needs the body) and keeps a
// request the filter refuses while holding its body from ever reaching the upstream, so tests can
// count backend requests exactly. A body released whole goes with its exact length; otherwise it
// streams through a pipe as the filter releases it, with the released Content-Length when there
// is one (chunked otherwise).
func (x *exchange) startUpstream(hs host.Headers, body []byte, eos bool) {
	x.upStarted = true
	x.upCh = make(chan upstreamResult, 1)
	method, _ := hs.Get(":method")
	path, _ := hs.Get(":path")
	authority, _ := hs.Get(":authority")
	var rbody io.Reader = http.NoBody
	length := int64(0)
	if eos {
		if len(body) > 0 {
			rbody, length = bytes.NewReader(body), int64(len(body))
		}
	} else {
		pr, pw := io.Pipe()
		rbody, x.pw, length = pr, pw, -1
		if cl, ok := hs.Get("content-length"); ok {
			if n, err := strconv.ParseInt(cl, 10, 64); err == nil && n >= 0 {
				length = n
			}
		}
	}
	req, err := http.NewRequestWithContext(x.ctx, method, x.g.target(path), rbody)
	if err != nil {
		x.upCh <- upstreamResult{err: err}
		if x.pw != nil {
			_ = x.pw.CloseWithError(err)
			x.pw = nil
		}
		return
	}
	req.Host = authority
	copyOut(req.Header, hs)
	req.Header.Del("Content-Length")
	req.ContentLength = length
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keep Go's default User-Agent out, as a proxy would
	}
	go func() {
		res, err := x.g.transport.RoundTrip(req)
		x.upCh <- upstreamResult{res: res, err: err}
	}()
	if !eos && len(body) > 0 {
		_, _ = x.pw.Write(body)
	}
}

// target is the upstream URL for a request path (the upstream's own path prefix kept).
func (g *Gateway) target(path string) string {
	base := strings.TrimSuffix(g.upstream.Path, "/")
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return g.upstream.Scheme + "://" + g.upstream.Host + base + path
}

// respond runs the upstream response (or the gateway's own 503) through the filter to the client.
func (x *exchange) respond(hs host.Headers, body io.Reader, noBody bool) {
	if !x.response(x.s.ResponseHeaders(hs, noBody)) {
		return
	}
	if !noBody {
		bp := bufPool.Get().(*[]byte)
		defer bufPool.Put(bp)
		buf := *bp
		for {
			n, err := body.Read(buf)
			eos := errors.Is(err, io.EOF)
			if n > 0 {
				x.active()
			}
			if err != nil && !eos {
				if x.ctx.Err() == nil {
					// The upstream reset mid-body: the client must not see a clean end.
					x.g.log.Warn("gateway: upstream body", "err", err)
					x.reset = true
				}
				return
			}
			if n == 0 && !eos {
				continue
			}
			if !x.response(x.s.ResponseBody(buf[:n], eos)) {
				return
			}
			if eos {
				break
			}
		}
	}
	for x.respPaused {
		res := x.s.Wait(x.ctx)
		if x.ctx.Err() != nil {
			return
		}
		if !x.response(res) {
			return
		}
	}
}

// response applies one filter result of the response direction; false when the exchange is over.
func (x *exchange) response(res host.Result) bool {
	switch res.Action {
	case host.LocalReply:
		if x.wroteHeaders {
			x.reset = true
		} else {
			x.writeLocal(res.Local)
		}
		return false
	case host.Close:
		x.reset = true
		return false
	}
	if res.Headers != nil && !x.wroteHeaders {
		if err := x.writeHeaders(res.Headers, res.EndOfStream, res.Body); err != nil {
			return false
		}
	}
	if len(res.Body) > 0 {
		if !x.wroteHeaders {
			x.pending = append(x.pending, res.Body...)
		} else if err := x.write(res.Body); err != nil {
			return false // the client went away
		}
	}
	x.respPaused = res.Action == host.Pause
	return x.ctx.Err() == nil
}

func (x *exchange) writeHeaders(hs host.Headers, eos bool, body []byte) error {
	status := http.StatusBadGateway
	if s, ok := hs.Get(":status"); ok {
		if n, err := strconv.Atoi(s); err == nil && n >= 100 && n <= 999 {
			status = n
		}
	}
	h := x.w.Header()
	copyOut(h, hs)
	if eos {
		// The whole (possibly rewritten) body is here: its length is known exactly.
		h.Set("Content-Length", strconv.Itoa(len(body)+len(x.pending)))
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // no sniffing: a proxy does not invent a content type
	}
	x.w.WriteHeader(status)
	x.wroteHeaders, x.status = true, status
	if len(x.pending) > 0 {
		p := x.pending
		x.pending = nil
		return x.write(p)
	}
	return x.rc.Flush()
}

func (x *exchange) write(b []byte) error {
	if _, err := x.w.Write(b); err != nil {
		return err
	}
	if err := x.rc.Flush(); err != nil {
		return err
	}
	x.active()
	return nil
}

// writeLocal sends a reply that replaces the upstream's (the filter's, or the gateway's own).
func (x *exchange) writeLocal(lr *host.LocalResponse) {
	if lr == nil || x.wroteHeaders {
		x.reset = true
		return
	}
	if lr.Details == detailsRequestTooLarge {
		lr = requestTooLarge(x.g.cfg.BufferLimit)
	}
	h := x.w.Header()
	copyOut(h, lr.Headers)
	h.Set("Content-Length", strconv.Itoa(len(lr.Body)))
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil
	}
	x.w.WriteHeader(lr.Status)
	x.wroteHeaders, x.status = true, lr.Status
	_, _ = x.w.Write(lr.Body)
}

// cleanup closes what the exchange still holds of the upstream.
func (x *exchange) cleanup() {
	if x.pw != nil {
		_ = x.pw.CloseWithError(context.Canceled)
	}
	if x.upStarted && !x.upConsumed {
		ch := x.upCh
		go func() {
			if u := <-ch; u.res != nil {
				_ = u.res.Body.Close()
			}
		}()
	}
}
