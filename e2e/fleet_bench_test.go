package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

// benchLimits is the plan both benchmarks admit: global and per-key token
// budgets on minute and day, too large to refuse during a run.
const benchLimits = `{"global":{"tokens_per_minute":1000000000,"tokens_per_day":1000000000},` +
	`"per_api_key":{"tokens_per_minute":1000000000,"tokens_per_day":1000000000}}`

// benchRequests sends b.N identical non-streamed requests one after the
// other through g, each admitted, proxied to the mock and settled.
func benchRequests(b *testing.B, g *gateway.Gateway) {
	body := chatReq("benchmark one admission", 16, false)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	url := "http://" + g.Addr() + "/v1/chat/completions"
	send := func() {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("content-type", "application/json")
		req.Header.Set("authorization", "Bearer sk-bench")
		req.Header.Set("x-mock-output-tokens", "8")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
	for i := 0; i < 20; i++ { // warm the VMs, the connections and the buckets
		send()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		send()
	}
}

// BenchmarkAdmissionLocal is one request through the local gateway with the
// plan reserved on the shared-data backend (storage "memory"). Compare with
// BenchmarkAdmissionFleet in the same run:
//
//	go test -run '^$' -bench 'Admission' -benchtime 2000x ./e2e/
func BenchmarkAdmissionLocal(b *testing.B) {
	g := startGateway(b, `{"rate_limiting":{"limits":`+benchLimits+`}}`)
	benchRequests(b, g)
}

// BenchmarkAdmissionFleet is the same request and plan with storage
// "redis": the admission is one proxy_http_call to an in-process sharedstore
// replica and one EVALSHA on a real Redis, and the settlement a second call
// after the response.
func BenchmarkAdmissionFleet(b *testing.B) {
	r := startReplica(b, redistest.Start(b))
	g := startGateway(b, fleetConfig(benchLimits, fleetToken, 2000, false),
		withClusters(map[string]string{"sharedstore": r.URL()}))
	benchRequests(b, g)
	b.StopTimer()
	if n := r.admitted(); n < b.N {
		b.Fatalf("replica admitted %d requests, want at least %d", n, b.N)
	}
}
