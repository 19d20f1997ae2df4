package wasmtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// TestTheSharedCasesHoldInTheWazeroHost runs the table the SDK's proxytest
// emulator runs too (filter/sdkhost), on the compiled module: plugin
// context i is worker VM i, the fleet store is reached over real HTTP.
func TestTheSharedCasesHoldInTheWazeroHost(t *testing.T) {
	Run(t, func(t *testing.T, c Case) Host {
		var opts []hopt
		g := &gate{}
		switch c.Store {
		case FleetStore:
			rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
			t.Cleanup(func() { _ = rdb.Close() })
			g.next = server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{}), Token: StoreToken})
			srv := httptest.NewServer(g)
			t.Cleanup(srv.Close)
			opts = append(opts, withClusters(map[string]string{"sharedstore": srv.URL}))
		case StoreDown:
			opts = append(opts, withClusters(map[string]string{"sharedstore": closedPort(t)}))
		}
		return wazeroCases{newHarness(t, c.Config, opts...), g}
	})
}

// gate holds the fleet store's answers back while closed, so a stream
// can end before its admission is answered.
type gate struct {
	next http.Handler
	mu   sync.RWMutex // write-locked while closed
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	g.next.ServeHTTP(w, r)
}

// wazeroCases is the harness as a Host.
type wazeroCases struct {
	x    *harness
	gate *gate
}

func (w wazeroCases) Name() string              { return "wazero" }
func (w wazeroCases) Advance(d time.Duration)   { w.x.clock.Advance(d) }
func (w wazeroCases) Counter(name string) int64 { w.x.h.Tick(); v, _ := w.x.h.Metric(name); return v }

func (w wazeroCases) Do(e Exchange) Reply {
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
	var out reply
	if e.ResetPending {
		w.gate.mu.Lock()
		require.NotEqual(x.t, host.LocalReply, s.RequestHeaders(host.Headers{{":method", "POST"}, {":path", c.path},
			{":authority", "llm"}, {"content-type", "application/json"}, {"authorization", "Bearer " + c.key}}, false).Action)
		require.Equal(x.t, host.Pause, s.RequestBody([]byte(c.body), true).Action, "the admission waits for the store")
		s.Done()
		w.gate.mu.Unlock()
	} else {
		out = x.play(s, c)
		s.Done()
	}
	r := Reply{Status: out.status, Headers: out.headers, Body: out.body, Local: out.local,
		UpstreamBody: out.upstreamBody, UpstreamHeaders: out.upstreamHdrs}
	if v, ok := s.FilterState("tokenbudget"); ok {
		require.NoError(x.t, json.Unmarshal(v, &r.Decision), string(v))
	}
	return r
}
