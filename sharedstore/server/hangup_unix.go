//go:build unix

package server

import "syscall"

// peerGone reports that the peer of a connection closed or reset it: a
// non-blocking peek that reads end of file or an error. Bytes waiting (a
// pipelined request) or none yet mean the caller is still there.
func peerGone(raw syscall.RawConn) bool {
	gone := false
	var b [1]byte
	_ = raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = err == nil && n == 0 || err != nil && err != syscall.EAGAIN && err != syscall.EINTR
		return true
	})
	return gone
}
