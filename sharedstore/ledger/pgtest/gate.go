//go:build !wasip1

package pgtest

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// Gate is a TCP relay in front of the PostgreSQL server that a test can
// cut (every connection through it is reset, and new ones are refused, as
// when the database or its network goes away), stall (bytes stop flowing
// both ways and new connections hang, as with a database that hangs or a
// network that drops packets) and open again.
type Gate struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	flowing *sync.Cond // signalled when a stall ends
	cut     bool
	stalled bool
	conns   map[net.Conn]struct{}
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
	g.flowing = sync.NewCond(&g.mu)
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
	g.flowing.Broadcast()
	for c := range g.conns {
		_ = c.Close()
	}
}

// Stall stops every byte through the gate until Open; connections stay
// open.
func (g *Gate) Stall() {
	g.mu.Lock()
	g.stalled = true
	g.mu.Unlock()
}

// Open lets connections through again, and bytes flow.
func (g *Gate) Open() {
	g.mu.Lock()
	g.cut, g.stalled = false, false
	g.flowing.Broadcast()
	g.mu.Unlock()
}

// wait blocks while the gate is stalled; false when it is cut.
func (g *Gate) wait() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.stalled && !g.cut {
		g.flowing.Wait()
	}
	return !g.cut
}

func (g *Gate) close() {
	_ = g.ln.Close()
	g.Cut()
	g.mu.Lock()
	g.flowing.Broadcast()
	g.mu.Unlock()
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
	if !g.wait() {
		_ = c.Close()
		return
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
	pipe := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && (!g.wait() || writeAll(dst, buf[:n]) != nil) {
				return
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	g.forget(c, up)
	<-done
}

func writeAll(w net.Conn, b []byte) error {
	for len(b) > 0 {
		n, err := w.Write(b)
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
