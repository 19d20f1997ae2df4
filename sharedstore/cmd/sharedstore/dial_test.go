package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestTheServiceDialsRedisAsGoRedisDoes(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	addr := ln.Addr().String()
	dialed := func(dial func(context.Context, string, string) (net.Conn, error)) net.Conn {
		c, err := dial(ctx, "tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}

	c, err := newClient("redis://"+addr+"/0", 4)
	require.NoError(t, err)
	defer c.Close()
	require.IsType(t, &net.TCPConn{}, dialed(c.(*redis.Client).Options().Dialer), "a single server")

	cc, err := newClient("redis-cluster://"+addr, 4)
	require.NoError(t, err)
	defer cc.Close()
	node := cc.(*redis.ClusterClient).Options().NewClient(&redis.Options{Addr: addr})
	defer node.Close()
	require.IsType(t, &net.TCPConn{}, dialed(node.Options().Dialer), "a cluster's node")

	// rediss keeps go-redis' TLS dialing.
	srv := httptest.NewTLSServer(nil)
	defer srv.Close()
	addr = strings.TrimPrefix(srv.URL, "https://")
	tc, err := newClient("rediss://"+addr+"/0?skip_verify=true", 4)
	require.NoError(t, err)
	defer tc.Close()
	require.IsType(t, &tls.Conn{}, dialed(tc.(*redis.Client).Options().Dialer))
}
