//go:build !linux

package rawsock

import (
	"net"
	"time"
)

// RecentUse has no effect on this system.
const RecentUse = time.Second

// Wrap returns c: raw system calls are used on Linux only.
func Wrap(c net.Conn) net.Conn { return c }
