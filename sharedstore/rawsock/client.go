package rawsock

import (
	"context"
	"net"

	"github.com/redis/go-redis/v9"
)

// NewClient is redis.NewClient with o's connections dialed as go-redis
// dials them and wrapped (a TLS connection, which is no socket, is left as
// it is). Its signature is that of ClusterOptions.NewClient, so a cluster's
// node clients are made by it too.
func NewClient(o *redis.Options) *redis.Client {
	dial := redis.NewDialer(o)
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return Wrap(c), nil
	}
	return redis.NewClient(o)
}
