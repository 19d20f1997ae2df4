package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// BenchmarkHTTPAdmitSettle drives one service on one Redis over loopback
// with a 6-dimension two-period plan: each iteration is an admission and its
// settlement, as a filter would send them. It reports admissions per second,
// admission latency p50/p99 and Redis round trips per call.
//
//	go test ./sharedstore/server -run '^$' -bench HTTPAdmitSettle -benchtime 3000x
func BenchmarkHTTPAdmitSettle(b *testing.B) {
	e := newEnv(b, false)
	srv := serve(b, New(Config{Buckets: e.store, Token: testToken, Registry: prometheus.NewRegistry()}))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	var seq atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(8) // 16 concurrent callers on 2 CPUs: a bounded load, not one caller's latency
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			id := "b" + strconv.FormatInt(seq.Add(1)%1000, 10)
			body := wire.AppendAdmit(nil, sixDimensionPlan(id, 100))
			t0 := time.Now()
			var r wire.AdmitResponse
			if err := call(client, srv.URL+wire.PathAdmit, body, &r); err != nil || !r.Admitted {
				b.Errorf("admit: %v %+v", err, r)
				return
			}
			mine = append(mine, time.Since(t0))
			var end wire.EndResponse
			if err := call(client, srv.URL+wire.PathSettle, wire.AppendSettle(nil, r.Hold, 60, nil), &end); err != nil || !end.Ended {
				b.Errorf("settle: %v", err)
				return
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	reportLatency(b, lat, elapsed)
	b.ReportMetric(float64(e.rt.n.Load())/float64(2*b.N), "redis-rt/call")
}

// BenchmarkStoreRoundTrips measures Redis round trips per admission and per
// settlement of the 6-dimension plan, single server and cluster, without HTTP.
//
//	go test ./sharedstore/server -run '^$' -bench StoreRoundTrips -benchtime 500x
func BenchmarkStoreRoundTrips(b *testing.B) {
	for _, cluster := range []bool{false, true} {
		name := "single"
		if cluster {
			name = "cluster"
		}
		b.Run(name, func(b *testing.B) {
			e := newEnv(b, cluster)
			ctx := context.Background()
			var admitRT, settleRT int64
			var lat []time.Duration
			start := time.Now()
			for i := 0; i < b.N; i++ {
				p := sixDimensionPlan("rt"+strconv.Itoa(i%1000), 100)
				before := e.rt.n.Load()
				t0 := time.Now()
				o, err := e.store.Admit(ctx, p)
				lat = append(lat, time.Since(t0))
				if err != nil || !o.Admitted() {
					b.Fatalf("admit: %v", err)
				}
				mid := e.rt.n.Load()
				if _, err := e.store.Settle(ctx, o.Hold.ID, entryKeys(o.Hold), 50); err != nil {
					b.Fatal(err)
				}
				admitRT += mid - before
				settleRT += e.rt.n.Load() - mid
			}
			reportLatency(b, lat, time.Since(start))
			b.ReportMetric(float64(admitRT)/float64(b.N), "redis-cmds/admit")
			b.ReportMetric(float64(settleRT)/float64(b.N), "redis-cmds/settle")
		})
	}
}

func entryKeys(h limit.Hold) []string {
	keys := make([]string, len(h.Entries))
	for i, e := range h.Entries {
		keys[i] = e.Key
	}
	return keys
}

func reportLatency(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "admits/s")
}

func call(c *http.Client, url string, body []byte, out any) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &statusErr{resp.StatusCode, string(b)}
	}
	return json.Unmarshal(b, out)
}

type statusErr struct {
	code int
	body string
}

func (e *statusErr) Error() string { return strconv.Itoa(e.code) + ": " + e.body }

// BenchmarkAdmitHandler is one admission through the service's handler
// without the network in front of it (the Redis call is real), to show the
// service's own CPU and allocations per decision.
//
//	go test ./sharedstore/server -run '^$' -bench AdmitHandler -benchmem
func BenchmarkAdmitHandler(b *testing.B) {
	e := newEnv(b, false)
	h := New(Config{Buckets: e.store, Token: testToken, Registry: prometheus.NewRegistry()})
	body := wire.AppendAdmit(nil, sixDimensionPlan("handler", 1))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, wire.PathAdmit, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
