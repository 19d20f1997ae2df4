//go:build linux

package rawsock

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

// pair is a loopback TCP connection: ours wrapped, theirs plain.
func pair(t *testing.T) (ours *Conn, theirs net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	theirs = <-accepted
	require.NotNil(t, theirs)
	w, ok := Wrap(c).(*Conn)
	require.True(t, ok, "a TCP connection is wrapped")
	t.Cleanup(func() { _ = w.Close(); _ = theirs.Close() })
	return w, theirs
}

func TestARawConnectionCarriesEveryByteBothWays(t *testing.T) {
	ours, theirs := pair(t)
	// Far more than the socket buffers hold, so writes meet a full buffer
	// (EAGAIN) and part-writes, and reads meet an empty one.
	sent := make([]byte, 8<<20)
	_, _ = rand.Read(sent)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(theirs)
		got <- b
	}()
	n, err := ours.Write(sent)
	require.NoError(t, err)
	require.Equal(t, len(sent), n)
	require.NoError(t, ours.Conn.(*net.TCPConn).CloseWrite())
	require.True(t, bytes.Equal(sent, <-got), "what the peer read is what was written")

	go func() {
		_, _ = theirs.Write(sent)
		_ = theirs.Close()
	}()
	back, err := io.ReadAll(ours)
	require.NoError(t, err, "the peer's close is io.EOF, which ReadAll does not report")
	require.True(t, bytes.Equal(sent, back))
	n, err = ours.Read(make([]byte, 1))
	require.Equal(t, 0, n)
	require.ErrorIs(t, err, io.EOF)
}

func TestAnEmptyReadReturnsAtOnce(t *testing.T) {
	ours, _ := pair(t)
	n, err := ours.Read(nil)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestDeadlinesEndReadsAndWritesAsTheyDoOnNetConn(t *testing.T) {
	ours, _ := pair(t)
	require.NoError(t, ours.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err := ours.Read(make([]byte, 16))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout(), "go-redis and net/http tell a timeout by net.Error")

	// The peer never reads: the buffers fill and the write waits, then
	// times out having written part of it.
	require.NoError(t, ours.SetWriteDeadline(time.Now().Add(50*time.Millisecond)))
	n, err := ours.Write(make([]byte, 64<<20))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Positive(t, n)
	require.Less(t, n, 64<<20)
}

func TestAClosedConnectionReportsNetErrClosed(t *testing.T) {
	ours, _ := pair(t)
	require.NoError(t, ours.Close())
	_, err := ours.Read(make([]byte, 1))
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = ours.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)
}

func TestAWriteToAResetPeerFailsAsAnOpError(t *testing.T) {
	ours, theirs := pair(t)
	// A close with unread data resets the connection.
	_, err := ours.Write([]byte("unread"))
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, theirs.(*net.TCPConn).SetLinger(0))
	require.NoError(t, theirs.Close())
	time.Sleep(10 * time.Millisecond)
	var werr error
	for range 100 { // the first write after a reset may still be accepted
		if _, werr = ours.Write([]byte("more")); werr != nil {
			break
		}
	}
	var op *net.OpError
	require.ErrorAs(t, werr, &op)
	require.Equal(t, "write", op.Op)
	require.True(t, errors.Is(werr, syscall.EPIPE) || errors.Is(werr, syscall.ECONNRESET), "got %v", werr)
}

func TestThePoolCheckRunsOnlyOnAConnectionIdleForRecentUse(t *testing.T) {
	ours, _ := pair(t)
	rc, err := ours.SyscallConn()
	require.NoError(t, err)
	calls := 0
	check := func(uintptr) bool { calls++; return true }

	require.NoError(t, rc.Read(check))
	require.Equal(t, 1, calls, "a connection that never read or wrote is checked")

	_, err = ours.Write([]byte("x"))
	require.NoError(t, err)
	require.NoError(t, rc.Read(check))
	require.Equal(t, 1, calls, "a connection that just wrote is not")

	ours.used.Store(time.Now().Add(-RecentUse - time.Millisecond).UnixNano())
	require.NoError(t, rc.Read(check))
	require.Equal(t, 2, calls, "one idle longer than RecentUse is")

	require.NoError(t, rc.Control(func(uintptr) { calls++ }))
	require.Equal(t, 3, calls, "Control is the socket's")
}

// client is a go-redis client as the service makes it.
func client(addr string, retries int) *redis.Client {
	return NewClient(&redis.Options{Addr: addr, MaxRetries: retries})
}

func TestGoRedisRunsOverRawConnections(t *testing.T) {
	ctx := context.Background()
	c := client(redistest.Start(t), 0)
	defer c.Close()
	big := string(bytes.Repeat([]byte("v"), 1<<20))
	require.NoError(t, c.Set(ctx, "k", big, 0).Err())
	got, err := c.Get(ctx, "k").Result()
	require.NoError(t, err)
	require.Equal(t, big, got)

	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range 100 {
			p.Incr(ctx, "n")
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, int64(100), cmds[99].(*redis.IntCmd).Val())
}

func TestAConnectionRedisClosedIsCheckedOnlyAfterRecentUse(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Start(t)
	killer := redis.NewClient(&redis.Options{Addr: addr})
	defer killer.Close()
	kill := func() {
		require.NoError(t, killer.Do(ctx, "client", "kill", "type", "normal", "skipme", "yes").Err())
	}

	// Without go-redis' retries, so that only the pool's check can keep
	// a call from meeting the close.
	c := client(addr, -1)
	defer c.Close()
	require.NoError(t, c.Ping(ctx).Err())
	kill()
	time.Sleep(RecentUse + 100*time.Millisecond)
	require.NoError(t, c.Ping(ctx).Err(), "idle past RecentUse, the check finds the close and the pool dials again")

	kill()
	require.ErrorIs(t, c.Ping(ctx).Err(), io.EOF, "within RecentUse the connection is not checked")
	require.NoError(t, c.Ping(ctx).Err(), "and the next call dials again")

	// With go-redis' default retries (the service's), no call sees it.
	r := client(addr, 0)
	defer r.Close()
	require.NoError(t, r.Ping(ctx).Err())
	kill()
	require.NoError(t, r.Ping(ctx).Err())
}
