package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// Front serves the filter's calls (POST /v1/admit, /v1/settle,
// /v1/release) on a listener and hands every other request to net/http.
//
// net/http was a quarter to a third of the service's CPU per decision: it
// parses every header into a map, builds a Request and a response, formats
// a date, and starts a background read per request so that a request's
// context ends when its caller hangs up. The filter's calls are plain
// HTTP/1.1: a request line, a few headers, a body of known length. Front
// reads exactly that, and on anything else (another method or path,
// chunked bodies, Expect, Upgrade, a header it cannot read plainly, a head
// past its buffer) it hands the connection, with the bytes it has read,
// to net/http, which then keeps it: every request net/http would answer is
// still answered by net/http, the same way.
//
// A caller that hangs up is found where it matters: the batch asks each
// call's context whether its caller gave up before it sends the call
// (stillWaiting), and a call's context here answers that, past
// hangupCheckAfter, by a non-blocking peek at its connection.
type Front struct {
	s      *Server
	l      net.Listener
	idle   time.Duration
	handed chan net.Conn
	done   chan struct{}
	once   sync.Once
	// conns are the connections Front serves itself, true while one is
	// answering a call, so that Shutdown closes the idle ones at once and
	// lets the busy ones finish.
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// NewFront serves s on l; idle bounds the wait for a request's head and
// body, as http.Server's ReadTimeout. Serve runs the accept loop, and the
// Front itself is the listener net/http serves the rest from.
func NewFront(l net.Listener, s *Server, idle time.Duration) *Front {
	return &Front{s: s, l: l, idle: idle, handed: make(chan net.Conn), done: make(chan struct{}), conns: map[net.Conn]bool{}}
}

// maxHead bounds a head Front reads itself; a longer one goes to net/http.
const maxHead = 4 << 10

// hangupCheckAfter is how long a call waits before the batch's question
// "did its caller give up?" costs a system call: a call waits for at most
// the batch before it, well under this, unless Redis is slow or down.
const hangupCheckAfter = 5 * time.Millisecond

// Serve accepts connections until Close.
func (f *Front) Serve() error {
	var backoff time.Duration
	for {
		c, err := f.l.Accept()
		if err != nil {
			select {
			case <-f.done:
				return http.ErrServerClosed
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// out of descriptors and the like: wait and try again, as
			// net/http does
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !f.track(c, false) {
			_ = c.Close()
			return http.ErrServerClosed
		}
		go f.serve(c)
	}
}

// Accept returns the next connection handed to net/http.
func (f *Front) Accept() (net.Conn, error) {
	select {
	case c := <-f.handed:
		return c, nil
	case <-f.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting; connections being served finish their request.
func (f *Front) Close() error {
	var err error
	f.once.Do(func() {
		close(f.done)
		err = f.l.Close()
	})
	return err
}

// Addr is the listener's address.
func (f *Front) Addr() net.Addr { return f.l.Addr() }

// Shutdown closes the listener, closes every connection Front serves
// that is between calls, waits for the others to finish their call, as
// http.Server's Shutdown does, and returns when they are all closed or ctx
// ends.
func (f *Front) Shutdown(ctx context.Context) error {
	_ = f.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		f.mu.Lock()
		for c, busy := range f.conns {
			if !busy {
				_ = c.Close()
				delete(f.conns, c)
			}
		}
		left := len(f.conns)
		f.mu.Unlock()
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// track records c as busy or between calls; false once Front is closed
// and c is not to be served.
func (f *Front) track(c net.Conn, busy bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.done:
		if !busy {
			return false
		}
	default:
	}
	f.conns[c] = busy
	return true
}

// forget drops c, which its goroutine no longer serves.
func (f *Front) forget(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// handedConn replays what Front read before net/http reads the rest.
type handedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *handedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (f *Front) serve(c net.Conn) {
	defer f.forget(c)
	br := bufio.NewReaderSize(c, maxHead)
	bw := bufio.NewWriterSize(c, 2048)
	w := &answer{h: http.Header{}}
	var body []byte
	for {
		_ = c.SetReadDeadline(time.Now().Add(f.idle))
		h, n, err := readHead(br)
		if err != nil {
			_ = c.Close()
			return
		}
		if n == 0 {
			_ = c.SetReadDeadline(time.Time{})
			select {
			case f.handed <- &handedConn{Conn: c, r: br}:
			case <-f.done:
				_ = c.Close()
			}
			return
		}
		_, _ = br.Discard(n)
		f.track(c, true)
		if cap(body) < h.length {
			body = make([]byte, h.length)
		}
		body = body[:h.length]
		if _, err := io.ReadFull(br, body); err != nil {
			_ = c.Close()
			return
		}
		w.reset()
		h.peer = c.RemoteAddr()
		ctx := f.contextFor(c)
		f.s.answer(ctx, w, h, body)
		ctx.cancel()
		if err := w.writeTo(bw); err != nil || h.close || !f.track(c, false) {
			_ = c.Close()
			return
		}
	}
}

// contextFor is a call's context: the service's Redis deadline, and its
// caller's hang-up where the batch asks.
func (f *Front) contextFor(c net.Conn) *hangup {
	ctx, cancel := context.WithTimeout(context.Background(), f.s.timeout)
	h := &hangup{Context: ctx, cancel: cancel, since: time.Now()}
	if sc, ok := c.(syscall.Conn); ok {
		h.raw, _ = sc.SyscallConn()
	}
	return h
}

// hangup is a call's context whose Err also reports its caller gone.
type hangup struct {
	context.Context
	cancel context.CancelFunc
	raw    syscall.RawConn
	since  time.Time
}

// Err is the deadline's error, or context.Canceled once the caller has
// hung up, which it checks only after hangupCheckAfter.
func (h *hangup) Err() error {
	if err := h.Context.Err(); err != nil {
		return err
	}
	if h.raw == nil || time.Since(h.since) < hangupCheckAfter || !peerGone(h.raw) {
		return nil
	}
	h.cancel()
	return context.Canceled
}

// head is what Front keeps of a request's head.
type head struct {
	path   string
	length int
	auth   []byte
	close  bool
	peer   net.Addr // the caller, for the log of a refused call
}

// readHead reads the head at the start of br without consuming it and
// returns it with its length, or n == 0 where the head is not one Front
// serves (net/http is to read it). An error is a connection that ended or
// timed out before a whole head.
func readHead(br *bufio.Reader) (h head, n int, err error) {
	if _, err := br.Peek(1); err != nil {
		return h, 0, err
	}
	for {
		b, _ := br.Peek(br.Buffered())
		// The head ends at the first blank line; only its bytes are
		// checked for a line ended by LF alone, which net/http reads as
		// a line too, so that a body or a pipelined call is not read.
		end := bytes.Index(b, []byte("\r\n\r\n"))
		headBytes := b
		if end >= 0 {
			headBytes = b[:end+4]
		}
		if bareLF(headBytes) {
			return h, 0, nil
		}
		if end >= 0 {
			h, ok := parseHead(b[:end+2])
			if !ok {
				return h, 0, nil
			}
			return h, end + 4, nil
		}
		if len(b) >= maxHead {
			return h, 0, nil
		}
		if _, err := br.Peek(len(b) + 1); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return h, 0, nil
			}
			return h, 0, err
		}
	}
}

// bareLF reports an LF not preceded by CR.
func bareLF(b []byte) bool {
	for i, c := range b {
		if c == '\n' && (i == 0 || b[i-1] != '\r') {
			return true
		}
	}
	return false
}

// parseHead reads a head (each line ending in CRLF, the blank line not
// included): a POST of one of the filter's paths in HTTP/1.1 with one Host,
// one Content-Length of at most maxBody, and no header that changes how
// the body or the connection is read. ok is false for anything else.
func parseHead(b []byte) (h head, ok bool) {
	line, rest, _ := bytes.Cut(b, []byte("\r\n"))
	m, ok := bytes.CutPrefix(line, []byte("POST "))
	if !ok {
		return h, false
	}
	path, ok := bytes.CutSuffix(m, []byte(" HTTP/1.1"))
	if !ok {
		return h, false
	}
	// the constant, not a copy of the bytes: no allocation per call
	switch string(path) {
	case wire.PathAdmit:
		h.path = wire.PathAdmit
	case wire.PathSettle:
		h.path = wire.PathSettle
	case wire.PathRelease:
		h.path = wire.PathRelease
	default:
		return h, false
	}
	h.length = -1
	hosts := 0
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 || !token(name) || !fieldValue(value) {
			return h, false
		}
		value = bytes.Trim(value, " \t")
		switch {
		case fold(name, "content-length"):
			if h.length >= 0 || len(value) == 0 || len(value) > 7 {
				return h, false
			}
			n := 0
			for _, c := range value {
				if c < '0' || c > '9' {
					return h, false
				}
				n = n*10 + int(c-'0')
			}
			if n > maxBody {
				return h, false
			}
			h.length = n
		case fold(name, "authorization"):
			if h.auth != nil {
				return h, false
			}
			h.auth = value
		case fold(name, "host"):
			hosts++
		case fold(name, "connection"):
			switch {
			case fold(value, "close"):
				h.close = true
			case !fold(value, "keep-alive"):
				return h, false
			}
		case fold(name, "transfer-encoding"), fold(name, "expect"), fold(name, "upgrade"), fold(name, "trailer"):
			return h, false
		}
	}
	return h, h.length >= 0 && hosts == 1
}

// token reports a header name of RFC 9110 token characters.
func token(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

// fieldValue reports a header value without control bytes but tabs (a bare
// CR or LF, which net/http reads as the end of a line, among them).
func fieldValue(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// fold reports b equal to the lower-case ASCII s, ignoring case.
func fold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// answer is the ResponseWriter a Front call is answered into.
type answer struct {
	h    http.Header
	code int
	body bytes.Buffer
}

func (a *answer) reset() {
	clear(a.h)
	a.code = 0
	a.body.Reset()
}

func (a *answer) Header() http.Header { return a.h }

func (a *answer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *answer) Write(p []byte) (int, error) {
	a.WriteHeader(http.StatusOK)
	return a.body.Write(p)
}

// writeTo writes the answer as HTTP/1.1 and flushes it.
func (a *answer) writeTo(bw *bufio.Writer) error {
	a.WriteHeader(http.StatusOK)
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(a.code))
	bw.WriteByte(' ')
	bw.WriteString(http.StatusText(a.code))
	bw.WriteString("\r\n")
	for name, values := range a.h {
		for _, v := range values {
			bw.WriteString(name)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("Date: ")
	bw.WriteString(date())
	bw.WriteString("\r\nContent-Length: ")
	bw.WriteString(strconv.Itoa(a.body.Len()))
	bw.WriteString("\r\n\r\n")
	bw.Write(a.body.Bytes())
	return bw.Flush()
}

// dateNow is the Date header's value, made once a second rather than per
// answer.
var dateNow struct {
	sync.Mutex
	sec int64
	v   string
}

func date() string {
	now := time.Now()
	dateNow.Lock()
	defer dateNow.Unlock()
	if s := now.Unix(); s != dateNow.sec {
		dateNow.sec, dateNow.v = s, now.UTC().Format(http.TimeFormat)
	}
	return dateNow.v
}
