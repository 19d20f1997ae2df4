package rawsock

import (
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// RecentUse is how recently a connection must have read or written for its
// pool check to be answered without a system call. A connection idle longer
// (which Redis may have closed, or restarted under) is checked as before; a
// close within RecentUse of the last call is met by the next call instead,
// as an end of file, which go-redis retries on a new connection.
const RecentUse = time.Second

// Conn is a socket whose Read and Write are raw system calls.
type Conn struct {
	net.Conn
	rc   syscall.RawConn
	used atomic.Int64 // Unix ns of the last read or write
}

// Wrap returns c as a Conn when it is a socket (TCP or Unix), else c.
func Wrap(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &Conn{Conn: c, rc: rc}
}

// Read reads as net.Conn does: up to len(p) bytes once some are there,
// io.EOF at the end, and the connection's read deadline honoured.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case 0:
				n = int(r)
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable, then call again
			}
			errno = e
			return true
		}
	})
	c.used.Store(time.Now().UnixNano())
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p as net.Conn does, waiting for room when the
// socket's buffer is full, the write deadline honoured.
func (c *Conn) Write(p []byte) (int, error) {
	n := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable, then call again
			default:
				errno = e
				return true
			}
		}
		return true
	})
	c.used.Store(time.Now().UnixNano())
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, c.opError("write", errno)
	}
	return n, nil
}

// opError is a system call's error as net.Conn reports it.
func (c *Conn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

// SyscallConn is the socket's, but for a Read within RecentUse of the
// connection's last read or write, which reports success without calling
// f (see the package doc).
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return checked{c}, nil }

type checked struct{ c *Conn }

func (k checked) Control(f func(fd uintptr)) error { return k.c.rc.Control(f) }

func (k checked) Read(f func(fd uintptr) bool) error {
	if time.Now().UnixNano()-k.c.used.Load() < int64(RecentUse) {
		return nil
	}
	return k.c.rc.Read(f)
}

func (k checked) Write(f func(fd uintptr) bool) error { return k.c.rc.Write(f) }
