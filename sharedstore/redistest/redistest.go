//go:build !wasip1

// Package redistest starts throwaway redis-server processes for tests, so
// every test package owns its Redis and no test touches a shared instance.
package redistest

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Start launches a standalone redis-server on a free loopback port with
// persistence off, in a temporary directory, killed at cleanup or when the
// process that started it dies. It returns "127.0.0.1:port". Without
// redis-server the test is skipped locally and fails under CI=true.
func Start(tb testing.TB) string {
	tb.Helper()
	bin := RequireBinary(tb, "redis-server")
	for attempt := 0; attempt < 5; attempt++ {
		port := freePort(tb, false)
		if addr, ok := launch(tb, bin, port, nil); ok {
			return addr
		}
	}
	tb.Fatal("redistest: redis-server did not start after 5 attempts")
	return ""
}

// StartCluster launches n cluster-enabled nodes (no replicas), joins them
// with redis-cli --cluster create and waits until every node reports
// cluster_state:ok. It returns the nodes' addresses.
func StartCluster(tb testing.TB, n int) []string {
	tb.Helper()
	bin := RequireBinary(tb, "redis-server")
	cli := RequireBinary(tb, "redis-cli")
	addrs := make([]string, 0, n)
	for len(addrs) < n {
		port := freePort(tb, true)
		addr, ok := launch(tb, bin, port, []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"})
		if ok {
			addrs = append(addrs, addr)
		}
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		for !strings.Contains(command(a, "CLUSTER", "INFO"), "cluster_state:ok") {
			if time.Now().After(deadline) {
				tb.Fatalf("redistest: cluster node %s never reached cluster_state:ok", a)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return addrs
}

// RequireBinary finds a Redis tool on PATH. Without it a test is skipped
// locally, but under CI=true it fails: CI must never pass by skipping.
func RequireBinary(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redistest: %s not found and CI=true: %v", name, err)
		}
		tb.Skipf("redistest: %s not installed", name)
	}
	return p
}

// freePort picks a port nothing listens on, below the kernel's ephemeral
// range: a port from that range can be handed to any outbound connection on
// the machine (other test packages run alongside) between the pick and the
// server's bind. A cluster node also needs its bus port (port+10000) free and
// below that range.
func freePort(tb testing.TB, cluster bool) int {
	tb.Helper()
	hi := ephemeralLow()
	if cluster {
		hi -= 10000
	}
	for i := 0; i < 200; i++ {
		port := lowestPort + rand.IntN(hi-lowestPort)
		if !portFree(port) || (cluster && !portFree(port+10000)) {
			continue
		}
		return port
	}
	tb.Fatal("redistest: no free port found")
	return 0
}

// FreeAddr is "127.0.0.1:port" for a port nothing listens on, picked as
// Start picks its servers' ports, for a test that starts a server of its own.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	return "127.0.0.1:" + strconv.Itoa(freePort(tb, false))
}

// lowestPort keeps the picks clear of the registered services below it.
const lowestPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default, 32768, where it cannot be read), never less than room for a
// cluster's bus ports above lowestPort.
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	return max(low, lowestPort+20000)
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// launch starts one server and waits for PING; false means the port was
// taken meanwhile (the caller tries another).
func launch(tb testing.TB, bin string, port int, extra []string) (string, bool) {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "redis-"+strconv.Itoa(port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--loglevel", "warning"}, extra...)
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, "redis.log"))
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logf.Close()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return "", false
		default:
		}
		if command(addr, "PING") == "PONG" {
			return addr, true
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("redistest: redis-server on %s never answered PING", addr)
	return "", false
}

// command sends one inline-free RESP command and returns the reply's text
// (a bulk string's payload or a simple string), or "" on any error. It keeps
// this package free of a Redis client.
func command(addr string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return ""
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil || len(line) < 3 {
		return ""
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '+':
		return line[1:]
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return ""
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return ""
		}
		return string(buf[:n])
	}
	return ""
}
