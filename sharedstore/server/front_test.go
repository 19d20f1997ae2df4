package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// serve runs h as the service runs it: a Front on the listener, net/http
// behind it. Every HTTP test of the package goes through it.
func serve(t testing.TB, h *Server) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	front := NewFront(srv.Listener, h, 10*time.Second)
	srv.Listener = front
	go func() { _ = front.Serve() }()
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, front.Shutdown(ctx))
	})
	return srv
}

// exchange writes raw on one connection to addr and reads n answers.
func exchange(t *testing.T, addr, raw string, n int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, raw)
	require.NoError(t, err)
	br := bufio.NewReader(c)
	var out []*http.Response
	for range n {
		r, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, r)
	}
	return out
}

func admitRequest(body []byte, extra string) string {
	return fmt.Sprintf("POST /v1/admit HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer %s\r\n%sContent-Length: %d\r\n\r\n%s", testToken, extra, len(body), body)
}

func TestTheFrontAnswersCallsAndHandsEverythingElseToNetHTTPOnOneConnection(t *testing.T) {
	srv := serve(t, New(Config{Buckets: newEnv(t, false).store, Token: testToken, Registry: prometheus.NewRegistry()}))
	p := limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "api_key", 1, minute(1000))}}
	body := wire.AppendAdmitHold(nil, p, clientHoldID())
	// pipelined: two calls the front reads, a GET it hands over, then a
	// call net/http reads on the connection it now keeps
	raw := admitRequest(body, "") + admitRequest(wire.AppendAdmitHold(nil, p, clientHoldID()), "") +
		"GET /healthz HTTP/1.1\r\nHost: s\r\n\r\n" + admitRequest(wire.AppendAdmitHold(nil, p, clientHoldID()), "")
	rs := exchange(t, srv.Listener.Addr().String(), raw, 4)
	for i, r := range rs {
		require.Equal(t, http.StatusOK, r.StatusCode, "answer %d", i)
		require.NotEmpty(t, r.Header.Get("Date"), "answer %d", i)
	}
	for _, i := range []int{0, 1, 3} {
		require.Equal(t, "application/json", rs[i].Header.Get("Content-Type"))
		b, _ := io.ReadAll(rs[i].Body)
		a, err := wire.DecodeAdmitResponse(b)
		require.NoError(t, err, "answer %d", i)
		require.True(t, a.Admitted, "answer %d", i)
	}
	b, _ := io.ReadAll(rs[2].Body)
	require.Equal(t, "ok\n", string(b))
}

// Whatever the front does not read plainly, net/http answers, exactly as
// it answers the same bytes when it serves alone.
func TestTheFrontLeavesToNetHTTPWhatItDoesNotReadPlainly(t *testing.T) {
	e := newEnv(t, false)
	front := serve(t, New(Config{Buckets: e.store, Token: testToken, Registry: prometheus.NewRegistry()}))
	alone := httptest.NewServer(New(Config{Buckets: e.store, Token: testToken, Registry: prometheus.NewRegistry()}))
	t.Cleanup(alone.Close)
	p := limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "api_key", 1, minute(1000))}}
	body := string(wire.AppendAdmit(nil, p))
	auth := "Authorization: Bearer " + testToken + "\r\n"
	for name, raw := range map[string]string{
		"chunked body":         "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body),
		"expect continue":      "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + "Expect: 100-continue\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"two lengths":          "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + fmt.Sprintf("Content-Length: %d\r\nContent-Length: %d\r\n\r\n%s", len(body), len(body)+1, body),
		"no host":              "POST /v1/admit HTTP/1.1\r\n" + auth + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"two hosts":            "POST /v1/admit HTTP/1.1\r\nHost: s\r\nHost: t\r\n" + auth + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"HTTP/1.0":             "POST /v1/admit HTTP/1.0\r\nHost: s\r\n" + auth + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"another path":         "POST /v1/admit/x HTTP/1.1\r\nHost: s\r\n" + auth + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"a GET of a call":      "GET /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + "\r\n",
		"a space before colon": "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + fmt.Sprintf("Content-Length : %d\r\n\r\n%s", len(body), body),
		"a folded header":      "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + " folded\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"a huge header":        "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + "X-Pad: " + strings.Repeat("a", 6000) + "\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"a body too large":     "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + fmt.Sprintf("Content-Length: %d\r\n\r\n", maxBody+1) + strings.Repeat(" ", maxBody+1),
		"a sign in the length": "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + fmt.Sprintf("Content-Length: +%d\r\n\r\n%s", len(body), body),
		"no token":             "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body),
		"not json":             "POST /v1/admit HTTP/1.1\r\nHost: s\r\n" + auth + "Content-Length: 1\r\n\r\n{",
		"lines ended by LF":    strings.ReplaceAll("POST /v1/admit HTTP/1.1\r\nHost: s\r\n"+auth+fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)), "\r\n", "\n") + body,
	} {
		t.Run(name, func(t *testing.T) {
			raw := raw + "GET /healthz HTTP/1.1\r\nHost: s\r\nConnection: close\r\n\r\n"
			want := statuses(t, alone.Listener.Addr().String(), raw)
			require.Equal(t, want, statuses(t, front.Listener.Addr().String(), raw))
		})
	}
}

// statuses writes raw on one connection and reads every answer's status
// until the server closes it.
func statuses(t *testing.T, addr, raw string) []int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	go func() { _, _ = io.WriteString(c, raw) }()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var out []int
	for {
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		_, _ = io.Copy(io.Discard, r.Body)
		out = append(out, r.StatusCode)
	}
}

func TestTheFrontClosesAConnectionThatAsksForIt(t *testing.T) {
	srv := serve(t, New(Config{Buckets: newEnv(t, false).store, Token: testToken, Registry: prometheus.NewRegistry()}))
	p := limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "api_key", 1, minute(1000))}}
	raw := admitRequest(wire.AppendAdmitHold(nil, p, clientHoldID()), "Connection: close\r\n") + admitRequest(wire.AppendAdmitHold(nil, p, clientHoldID()), "")
	require.Equal(t, []int{http.StatusOK}, statuses(t, srv.Listener.Addr().String(), raw))
}

// A call the front read whose caller hangs up while it waits in the batch
// is not sent: the batch asks its context, which peeks at the connection.
func TestACallWhoseCallerHungUpIsNeverSent(t *testing.T) {
	e := newEnv(t, false)
	srv := serve(t, New(Config{Buckets: e.store, Token: testToken, Registry: prometheus.NewRegistry()}))
	b := e.store.batch
	tk := uniq("tk")
	l := minute(1000)
	p := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}
	b.mu.Lock()
	b.senders = maxSenders // both calls queue
	b.mu.Unlock()
	gone, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	_, err = io.WriteString(gone, admitRequest(wire.AppendAdmitHold(nil, p, clientHoldID()), ""))
	require.NoError(t, err)
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) == 1 }, 5*time.Second, time.Millisecond)
	kept := make(chan int, 1) // the status, or 0 when the call failed
	go func() {
		defer close(kept)
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := io.WriteString(c, admitRequest(wire.AppendAdmitHold(nil, p, clientHoldID()), "")); err != nil {
			return
		}
		if r, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			kept <- r.StatusCode
		}
	}()
	require.Eventually(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.pending) == 2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, gone.Close())
	time.Sleep(2 * hangupCheckAfter)
	b.next()
	require.Equal(t, http.StatusOK, <-kept)
	require.InDelta(t, 990, level(t, e, tk, l), 0.5, "only the call whose caller was still there ran")
}

// Every head the front reads itself, net/http reads as the same request:
// the same path and body length, the same token, one host, no transfer
// coding, and the same choice to close.
func FuzzAHeadTheFrontReadsIsTheRequestNetHTTPReads(f *testing.F) {
	f.Add([]byte("POST /v1/admit HTTP/1.1\r\nHost: s\r\nAuthorization: Bearer x\r\nContent-Length: 12\r\n"))
	f.Add([]byte("POST /v1/settle HTTP/1.1\r\nhost: s\r\nconnection: close\r\ncontent-length:0\r\nX-A: b\r\n"))
	f.Add([]byte("POST /v1/release HTTP/1.1\r\nHost: s\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !bytes.HasSuffix(b, []byte("\r\n")) || bytes.Contains(b, []byte("\r\n\r\n")) {
			return // not a head as readHead hands it over: lines ending in CRLF, the blank one cut
		}
		h, ok := parseHead(b)
		if !ok {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(string(b) + "\r\n")))
		require.NoError(t, err, "%q", b)
		require.Equal(t, http.MethodPost, r.Method)
		require.Equal(t, h.path, r.URL.Path)
		require.Equal(t, h.path, r.RequestURI)
		require.Equal(t, int64(h.length), r.ContentLength)
		require.Empty(t, r.TransferEncoding)
		require.Equal(t, 1, r.ProtoMinor)
		require.Equal(t, h.close, r.Close)
		require.Equal(t, string(h.auth), r.Header.Get("Authorization"))
		require.Len(t, r.Header.Values("Authorization"), min(1, len(r.Header.Values("Authorization"))))
		require.Empty(t, r.Header.Get("Expect"))
		require.LessOrEqual(t, h.length, maxBody)
	})
}

// A head whose lines end in LF alone, with nothing after it, reaches
// net/http at once rather than waiting for a CRLF that never comes.
func TestAHeadOfLFLinesAloneIsHandedOverAtOnce(t *testing.T) {
	srv := serve(t, New(Config{Buckets: newEnv(t, false).store, Token: testToken, Registry: prometheus.NewRegistry()}))
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /healthz HTTP/1.1\nHost: s\n\n")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(2*time.Second)))
	r, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "answered before the front's idle bound")
	require.Equal(t, http.StatusOK, r.StatusCode)
}
