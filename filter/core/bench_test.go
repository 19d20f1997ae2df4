package core

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// These benchmarks drive the core natively through a host that allocates
// only where the wasm binding allocates in the guest (every value a host
// call returns is a fresh buffer), so allocs/op is the guest's garbage, the
// work its collector pays for, and ns/op tracks the guest's own code. The
// SDK's emulator cannot stand in here: it copies on its side of every call
// (property paths, shared data, header edits) and takes a lock, which would
// count as the guest's.

// guestHost is that host: one request's headers and bodies, shared data
// and a fixed clock; the calls whose effect the benchmarks do not read
// succeed and keep nothing.
type guestHost struct {
	now     int64
	metrics uint32 // the last metric id defined
	shared  map[string]*guestEntry
	cas     uint32
	req     [][2]string
	resp    [][2]string
	body    []byte
	chunk   []byte
	peer    []byte
	scratch []byte
}

type guestEntry struct {
	value []byte
	cas   uint32
}

func newGuestHost() *guestHost {
	return &guestHost{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(), shared: map[string]*guestEntry{},
		peer: []byte("10.1.2.3:40000")}
}

var _ abi.Host = (*guestHost)(nil)

func (g *guestHost) Log(abi.LogLevel, string)                         {}
func (g *guestHost) NowNanos() int64                                  { return g.now }
func (g *guestHost) SetFilterState(string, []byte) abi.Status         { return abi.StatusOK }
func (g *guestHost) AddHeader(abi.MapType, string, string) abi.Status { return abi.StatusOK }
func (g *guestHost) SendLocalResponse(int, string, []byte, [][2]string) abi.Status {
	return abi.StatusOK
}
func (g *guestHost) HTTPCall(string, [][2]string, []byte, uint32) (uint32, abi.Status) {
	return 0, abi.StatusBadArgument // no cluster: the benchmarks' stores are local
}
func (g *guestHost) SetEffectiveContext(uint32) abi.Status    { return abi.StatusOK }
func (g *guestHost) ContinueStream(abi.StreamType) abi.Status { return abi.StatusOK }
func (g *guestHost) SetTickPeriod(uint32) abi.Status          { return abi.StatusOK }
func (g *guestHost) DefineMetric(abi.MetricType, string) (uint32, abi.Status) {
	g.metrics++
	return g.metrics, abi.StatusOK
}
func (g *guestHost) IncrementMetric(uint32, int64) abi.Status { return abi.StatusOK }
func (g *guestHost) RecordMetric(uint32, uint64) abi.Status   { return abi.StatusOK }
func (g *guestHost) GetMetric(uint32) (uint64, abi.Status)    { return 0, abi.StatusOK }
func (g *guestHost) GetStatus() (uint32, string)              { return 0, "" }

func header(hs [][2]string, name string) (string, abi.Status) {
	for _, h := range hs {
		if h[0] == name {
			return strings.Clone(h[1]), abi.StatusOK // the binding copies the value into guest memory
		}
	}
	return "", abi.StatusNotFound
}

func (g *guestHost) GetHeader(m abi.MapType, name string) (string, abi.Status) {
	switch m {
	case abi.MapRequestHeaders:
		return header(g.req, name)
	case abi.MapResponseHeaders:
		return header(g.resp, name)
	}
	return "", abi.StatusBadArgument
}

// GetHeaders is the whole map, copied as the binding copies it.
func (g *guestHost) GetHeaders(m abi.MapType) ([][2]string, abi.Status) {
	return g.AppendHeaders(nil, m)
}

func (g *guestHost) AppendHeaders(dst [][2]string, m abi.MapType) ([][2]string, abi.Status) {
	var hs [][2]string
	switch m {
	case abi.MapRequestHeaders:
		hs = g.req
	case abi.MapResponseHeaders:
		hs = g.resp
	default:
		return dst, abi.StatusOK
	}
	// As the binding: the host writes the encoded pairs into one guest
	// allocation and the strings view it, so a listing costs the guest that
	// buffer and the slice, not a string per name and value.
	size := 0
	for _, h := range hs {
		size += len(h[0]) + len(h[1])
	}
	buf := make([]byte, 0, size)
	for _, h := range hs {
		k := len(buf)
		buf = append(buf, h[0]...)
		v := len(buf)
		buf = append(buf, h[1]...)
		dst = append(dst, [2]string{unsafe.String(unsafe.SliceData(buf[k:]), len(h[0])), unsafe.String(unsafe.SliceData(buf[v:]), len(h[1]))})
	}
	return dst, abi.StatusOK
}

func (g *guestHost) ReplaceHeader(abi.MapType, string, string) abi.Status { return abi.StatusOK }
func (g *guestHost) RemoveHeader(abi.MapType, string) abi.Status          { return abi.StatusOK }

func (g *guestHost) GetProperty(path ...string) ([]byte, abi.Status) {
	if len(path) == 2 && path[0] == "source" && path[1] == "address" {
		return append([]byte(nil), g.peer...), abi.StatusOK
	}
	return nil, abi.StatusNotFound
}

func (g *guestHost) GetBuffer(b abi.BufferType, start, maxSize int) ([]byte, abi.Status) {
	var d []byte
	switch b {
	case abi.BufferRequestBody:
		d = g.body
	case abi.BufferResponseBody:
		d = g.chunk
	default:
		return nil, abi.StatusNotFound
	}
	end := min(len(d), start+maxSize)
	return append([]byte(nil), d[start:end]...), abi.StatusOK
}

func (g *guestHost) SetBuffer(abi.BufferType, int, int, []byte) abi.Status { return abi.StatusOK }

func (g *guestHost) GetSharedData(key string) ([]byte, uint32, abi.Status) {
	e, ok := g.shared[key]
	if !ok {
		return nil, 0, abi.StatusNotFound
	}
	return append([]byte(nil), e.value...), e.cas, abi.StatusOK
}

// The scratch reads allocate nothing in the VM either.
func (g *guestHost) GetSharedDataScratch(key string) ([]byte, uint32, abi.Status) {
	e, ok := g.shared[key]
	if !ok {
		return nil, 0, abi.StatusNotFound
	}
	g.scratch = append(g.scratch[:0], e.value...)
	return g.scratch, e.cas, abi.StatusOK
}

func (g *guestHost) GetBufferScratch(b abi.BufferType, start, maxSize int) ([]byte, abi.Status) {
	var d []byte
	switch b {
	case abi.BufferRequestBody:
		d = g.body
	case abi.BufferResponseBody:
		d = g.chunk
	default:
		return nil, abi.StatusNotFound
	}
	g.scratch = append(g.scratch[:0], d[start:min(len(d), start+maxSize)]...)
	return g.scratch, abi.StatusOK
}

func (g *guestHost) GetHeaderScratch(m abi.MapType, name string) (string, abi.Status) {
	hs := g.req
	if m == abi.MapResponseHeaders {
		hs = g.resp
	}
	for _, h := range hs {
		if h[0] == name {
			g.scratch = append(g.scratch[:0], h[1]...)
			return unsafe.String(unsafe.SliceData(g.scratch), len(g.scratch)), abi.StatusOK
		}
	}
	return "", abi.StatusNotFound
}

func (g *guestHost) SetSharedData(key string, value []byte, cas uint32) abi.Status {
	e, ok := g.shared[key]
	if ok && cas != 0 && cas != e.cas {
		return abi.StatusCasMismatch
	}
	if !ok {
		e = &guestEntry{}
		g.shared[key] = e
	}
	g.cas++
	e.value, e.cas = append(e.value[:0], value...), g.cas
	return abi.StatusOK
}

const benchTwoDimensions = `{"rate_limiting":{"limits":{
  "global":      {"tokens_per_minute":1000000000000,"tokens_per_day":1000000000000},
  "per_api_key": {"tokens_per_minute":1000000000000,"tokens_per_day":1000000000000}},
  "budget_division":{"replicas":1}}}`

const benchLimits = `{"tokens_per_minute":1000000000000,"tokens_per_day":1000000000000,` +
	`"requests_per_second":1000000,"burst_capacity":1000000000,"requests_per_minute":1000000000,"requests_per_day":1000000000}`

var benchSixDimensions = `{"rate_limiting":{"limits":{"global":` + benchLimits + `,"per_client":` + benchLimits +
	`,"per_api_key":` + benchLimits + `,"per_user":` + benchLimits + `,"per_team":` + benchLimits +
	`,"per_model":{"gpt-4o":` + benchLimits + `}},"budget_division":{"replicas":1}},` +
	`"api_keys":[{"key":"sk-bench","id":"bench","user":"alice","team":"research"}]}`

// benchBody is a chat request of about size bytes.
func benchBody(size int, stream bool) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","max_tokens":1024,`)
	if stream {
		b.WriteString(`"stream":true,`)
	}
	b.WriteString(`"messages":[`)
	for i := 0; b.Len() < size-120; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"role":"user","content":"The filter reserves an estimate of the prompt and settles it against usage. func main() {\n\tprintln(\"hi\")\n}"}`)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

type benchRig struct {
	h    *guestHost
	root *Root
	next uint32
}

func newBenchRig(b *testing.B, config string) *benchRig {
	h := newGuestHost()
	root := NewRoot(1, h)
	require.True(b, root.OnConfigure([]byte(config)))
	return &benchRig{h: h, root: root, next: 2}
}

// request runs one exchange: headers, the body in one chunk, the response
// headers and its body chunks.
func (r *benchRig) request(b *testing.B, body []byte, respType string, chunks [][]byte) {
	id := r.next
	r.next++
	s := r.root.NewHttpContext(id).(*Stream)
	r.h.body = body
	if s.OnHttpRequestHeaders(len(r.h.req), false) != abi.ActionContinue ||
		s.OnHttpRequestBody(len(body), true) != abi.ActionContinue {
		b.Fatal("request not admitted")
	}
	r.h.resp[1][1] = respType
	s.OnHttpResponseHeaders(len(r.h.resp), false)
	for i, c := range chunks {
		r.h.chunk = c
		s.OnHttpResponseBody(len(c), i == len(chunks)-1)
	}
	s.OnHttpStreamDone()
	s.OnDone()
	s.OnDelete()
}

func (r *benchRig) setHeaders(body []byte) {
	r.h.req = [][2]string{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
		{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(body))},
		{"authorization", "Bearer sk-bench"}}
	r.h.resp = [][2]string{{":status", "200"}, {"content-type", "application/json"}}
}

func benchResponse(prompt int) []byte {
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":` +
		strconv.Itoa(prompt) + `,"completion_tokens":20,"total_tokens":` + strconv.Itoa(prompt+20) + `}}`)
}

// BenchmarkCoreRequest is one admitted, reserved and settled 1 KiB request.
func BenchmarkCoreRequest(b *testing.B) {
	for _, c := range []struct{ name, config string }{
		{"dims=2", benchTwoDimensions},
		{"dims=6+requests", benchSixDimensions},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := newBenchRig(b, c.config)
			body := benchBody(1<<10, false)
			r.setHeaders(body)
			resp := [][]byte{benchResponse(256)}
			r.request(b, body, "application/json", resp)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.request(b, body, "application/json", resp)
			}
		})
	}
}

// BenchmarkCoreStreamChunk is a streamed answer of 200 ~100 B events and
// the usage event: only the 201 response body calls (settlement included)
// are timed, so ns/op and allocs/op are per answer; divide by 201.
func BenchmarkCoreStreamChunk(b *testing.B) {
	r := newBenchRig(b, benchTwoDimensions)
	body := benchBody(1<<10, true)
	r.setHeaders(body)
	const n = 200
	chunks := make([][]byte, 0, n+1)
	for i := 0; i < n; i++ {
		chunks = append(chunks, []byte(`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word "}}]}`+"\n\n"))
	}
	chunks = append(chunks, []byte(`data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":200,"total_tokens":210}}`+"\n\ndata: [DONE]\n\n"))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		id := r.next
		r.next++
		s := r.root.NewHttpContext(id).(*Stream)
		r.h.body = body
		s.OnHttpRequestHeaders(len(r.h.req), false)
		s.OnHttpRequestBody(len(body), true)
		r.h.resp[1][1] = "text/event-stream"
		s.OnHttpResponseHeaders(len(r.h.resp), false)
		b.StartTimer()
		for j := 0; j <= n; j++ {
			r.h.chunk = chunks[j]
			s.OnHttpResponseBody(len(chunks[j]), j == n)
		}
		b.StopTimer()
		s.OnDone()
		s.OnDelete()
		b.StartTimer()
	}
}

// benchSpend is the dims=2 config with a price list and key sk-bench under
// spend limits: with limits true, three of them (the key's day and month,
// its team's month); without, none, so the spend path is skipped.
func benchSpend(limits bool) string {
	key := `{"key":"sk-bench","id":"bench","user":"alice","team":"research"}`
	spend := ``
	if limits {
		key = `{"key":"sk-bench","id":"bench","user":"alice","team":"research","spend_limit_day_usd":1000000,"spend_limit_month_usd":1000000}`
		spend = `,"spend_limits":{"teams":{"research":{"month_usd":1000000}}}`
	}
	return `{"rate_limiting":{"limits":{
  "global":      {"tokens_per_minute":1000000000000,"tokens_per_day":1000000000000},
  "per_api_key": {"tokens_per_minute":1000000000000,"tokens_per_day":1000000000000}},
  "budget_division":{"replicas":1}},
  "pricing":{"gpt-4o":{"input":"2.50","cached_input":"1.25","output":"10.00"}},
  "api_keys":[` + key + `]` + spend + `}`
}

// BenchmarkCoreSpend is BenchmarkCoreRequest's dims=2 request without and
// with three spend limits: preflight (three counter reads), pricing, the
// success headers and postflight (three CAS writes). benchstat -col /spend
// gives the ratio.
func BenchmarkCoreSpend(b *testing.B) {
	for _, c := range []struct {
		name   string
		limits bool
	}{{"spend=none", false}, {"spend=3limits", true}} {
		b.Run(c.name, func(b *testing.B) {
			r := newBenchRig(b, benchSpend(c.limits))
			body := benchBody(1<<10, false)
			r.setHeaders(body)
			resp := [][]byte{benchResponse(256)}
			r.request(b, body, "application/json", resp)
			_, spent := r.h.shared["tb|s|api_key_day|bench"]
			require.Equal(b, c.limits, spent, "the spend path ran exactly when limits apply")
			took := make([]time.Duration, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				r.request(b, body, "application/json", resp)
				took[i] = time.Since(start)
			}
			b.StopTimer()
			// The mean carries the shared machine's scheduler noise; the
			// median request is the steadier figure.
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/op")
		})
	}
}
