package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// The service's listener answers the filter's calls, its other endpoints
// and the calls net/http reads, and shuts down when its context ends.
func TestTheServiceAnswersOnOneListenerAndShutsDown(t *testing.T) {
	redistest.RequireBinary(t, "redis-server")
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	store := server.NewBuckets(rdb, server.Options{})
	require.NoError(t, store.Load(context.Background()))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, l, server.New(server.Config{Buckets: store, Token: "t0k"}), nil) }()
	base := "http://" + l.Addr().String()
	p := limit.Plan{Tokens: []limit.Op{{Key: "tb|t|api_key|v1|k", Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Amount: 5,
		Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: 100, RefillPerSec: 1}}}}}
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(wire.AppendAdmit(nil, p))
		if chunked {
			body = io.MultiReader(body) // no length: the client sends it chunked, for net/http
		}
		req, err := http.NewRequest(http.MethodPost, base+wire.PathAdmit, body)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer t0k")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		a, err := wire.DecodeAdmitResponse(b)
		require.NoError(t, err)
		require.True(t, a.Admitted, "chunked %v", chunked)
	}
	resp, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, string(b), `tokenbudget_sharedstore_requests_total{operation="admit",outcome="admitted"} 2`)
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
	_, err = http.Get(base + "/healthz")
	require.Error(t, err, "nothing listens after shutdown")
	require.False(t, strings.Contains(string(b), "t0k"), "the token is never shown")
}
