package rawsock

import (
	"context"
	"net"
)

// DialFunc dials as go-redis' Options.Dialer does.
type DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)
