//go:build !wasip1

package pgtest

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Gate is a TCP relay in front of the PostgreSQL server that a test can
// cut (every connection through it is reset, and new ones are refused, as
// when the database or its network goes away) and open again.
type Gate struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

// Gated returns dbURL (a URL from Database) rewritten to reach its server
// through a new gate, and the gate; the gate closes at cleanup.
func Gated(tb testing.TB, dbURL string) (string, *Gate) {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: gate: %v", err)
	}
	g := &Gate{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	go g.accept()
	tb.Cleanup(g.close)
	u.Host = ln.Addr().String()
	return u.String(), g
}

// Cut resets every connection through the gate and refuses new ones.
func (g *Gate) Cut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut = true
	for c := range g.conns {
		_ = c.Close()
	}
}

// Open lets connections through again.
func (g *Gate) Open() {
	g.mu.Lock()
	g.cut = false
	g.mu.Unlock()
}

func (g *Gate) close() {
	_ = g.ln.Close()
	g.Cut()
}

func (g *Gate) accept() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.relay(c)
	}
}

// track registers c unless the gate is cut.
func (g *Gate) track(cs ...net.Conn) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cut {
		return false
	}
	for _, c := range cs {
		g.conns[c] = struct{}{}
	}
	return true
}

func (g *Gate) forget(cs ...net.Conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range cs {
		delete(g.conns, c)
		_ = c.Close()
	}
}

func (g *Gate) relay(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // a cut is a reset, not an orderly close
	}
	up, err := net.Dial("tcp", g.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !g.track(c, up) {
		_ = c.Close()
		_ = up.Close()
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) { _, _ = io.Copy(dst, src); done <- struct{}{} }
	go pipe(up, c)
	go pipe(c, up)
	<-done
	g.forget(c, up)
	<-done
}
