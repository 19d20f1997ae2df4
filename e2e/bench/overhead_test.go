package bench

import (
	"slices"
	"testing"
	"time"
)

// budgetConfig gives per_api_key and global token budgets (minute and day)
// so large that no benchmark loop can exhaust them on a frozen clock: every
// request is admitted, reserved and settled, the filter's whole path.
const budgetConfig = `{
  "rate_limiting": {
    "limits": {
      "global":      { "tokens_per_minute": 1000000000000, "tokens_per_day": 1000000000000 },
      "per_api_key": { "tokens_per_minute": 1000000000000, "tokens_per_day": 1000000000000 }
    },
    "budget_division": { "replicas": 1 }
  }
}`

// bodySizes are the request bodies of BenchmarkRequest; 1 MiB is Envoy's
// default buffer limit, the largest body a buffering filter sees.
var bodySizes = []struct {
	name string
	size int
}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

// BenchmarkRequest is the per-request cost of admission and settlement: a
// chat request of each body size, answered with a ~300 B completion that
// reports usage, through the filter and through the pass-through module in
// the same host with the same driving code. The difference is the filter's
// own work; `benchstat -col /module` gives it as a ratio.
func BenchmarkRequest(b *testing.B) {
	for _, module := range []string{passthrough, filter} {
		b.Run("module="+module, func(b *testing.B) {
			d := newDriver(b, module, budgetConfig)
			for _, bs := range bodySizes {
				b.Run("body="+bs.name, func(b *testing.B) {
					e := exchange{key: "sk-bench", body: chatBody(b, bs.size, false),
						chunks: [][]byte{chatResponse(bs.size/4, 20)}}
					runExchanges(b, d, e)
				})
			}
		})
	}
}

// streamedChunks is the length of BenchmarkStreamChunk's answer, long
// enough that the per-chunk figure is not the request's cost in disguise.
const streamedChunks = 200

// BenchmarkStreamChunk is the per-chunk cost of a streamed OpenAI answer
// (~100 B events, usage in the last one): only the response body calls are
// timed, reported as ns/chunk, through the filter and the pass-through.
func BenchmarkStreamChunk(b *testing.B) {
	for _, module := range []string{passthrough, filter} {
		b.Run("module="+module, func(b *testing.B) {
			d := newDriver(b, module, budgetConfig)
			e := exchange{key: "sk-bench", body: chatBody(b, 1<<10, true), contentType: "text/event-stream",
				chunks: streamChunks(streamedChunks)}
			req, resp := e.requestHeaders(), e.responseHeaders()
			b.ReportAllocs()
			b.ResetTimer()
			var timed time.Duration
			took := make([]time.Duration, b.N)
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, local := d.open(e, req)
				if local != nil {
					b.Fatalf("refused with %d: %s", local.Status, local.Body)
				}
				s.ResponseHeaders(resp, false)
				b.StartTimer()
				start := time.Now()
				for j, ch := range e.chunks {
					s.ResponseBody(ch, j == len(e.chunks)-1)
				}
				took[i] = time.Since(start)
				timed += took[i]
				b.StopTimer()
				s.Done()
				b.StartTimer()
			}
			b.ReportMetric(float64(timed.Nanoseconds())/float64(b.N*len(e.chunks)), "ns/chunk")
			b.ReportMetric(float64(median(took).Nanoseconds())/float64(len(e.chunks)), "p50-ns/chunk")
		})
	}
}

// runExchanges times whole exchanges; the headers are built once, as a
// proxy would have them parsed already. Besides the mean (ns/op) it
// reports the median request (p50-ns/op).
func runExchanges(b *testing.B, d *driver, e exchange) {
	req, resp := e.requestHeaders(), e.responseHeaders()
	b.SetBytes(int64(len(e.body)))
	b.ReportAllocs()
	took := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		d.do(e, req, resp, nil)
		took[i] = time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(median(took).Nanoseconds()), "p50-ns/op")
}

// median is the typical request's cost: ns/op is the mean, which also
// carries the rare multi-millisecond pauses (the guest's garbage
// collector runs every few dozen requests) spread over all of them.
func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
