package wasmtest

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/filter/hostcases"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// TestTheSharedCasesHoldInTheWazeroHost runs the table the SDK's proxytest
// emulator runs too (filter/sdkhost), on the compiled module: plugin
// context i is worker VM i, the fleet store is reached over real HTTP.
func TestTheSharedCasesHoldInTheWazeroHost(t *testing.T) {
	hostcases.Run(t, func(t *testing.T, c hostcases.Case) hostcases.Host {
		var opts []hopt
		switch c.Store {
		case hostcases.FleetStore:
			rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
			t.Cleanup(func() { _ = rdb.Close() })
			srv := httptest.NewServer(server.New(server.Config{Store: server.NewStore(rdb, server.Options{}), Token: hostcases.StoreToken}))
			t.Cleanup(srv.Close)
			opts = append(opts, withClusters(map[string]string{"sharedstore": srv.URL}))
		case hostcases.StoreDown:
			opts = append(opts, withClusters(map[string]string{"sharedstore": closedPort(t)}))
		}
		return wazeroCases{newHarness(t, c.Config, opts...)}
	})
}

// wazeroCases is the harness as a hostcases.Host.
type wazeroCases struct{ x *harness }

func (w wazeroCases) Name() string              { return "wazero" }
func (w wazeroCases) Advance(d time.Duration)   { w.x.clock.Advance(d) }
func (w wazeroCases) Counter(name string) int64 { w.x.h.Tick(); v, _ := w.x.h.Metric(name); return v }

func (w wazeroCases) Do(e hostcases.Exchange) hostcases.Reply {
	x := w.x
	x.t.Helper()
	c := call{path: e.Path, key: e.Key, headers: host.Headers(e.Headers), body: e.Body, source: e.Source,
		status: e.Status, contentType: e.ContentType, respHeaders: host.Headers(e.RespHeaders), chunks: e.Chunks, cut: e.Cut}
	if c.path == "" {
		c.path = "/v1/chat/completions"
	}
	if c.source == "" {
		c.source = "10.1.2.3:40000"
	}
	s := x.h.NewStream(host.StreamInfo{Worker: e.Plugin, SourceAddress: c.source})
	out := x.play(s, c)
	s.Done()
	r := hostcases.Reply{Status: out.status, Headers: out.headers, Body: out.body, Local: out.local,
		UpstreamBody: out.upstreamBody, UpstreamHeaders: out.upstreamHdrs}
	if v, ok := s.FilterState("tokenbudget"); ok {
		require.NoError(x.t, json.Unmarshal(v, &r.Decision), string(v))
	}
	return r
}
