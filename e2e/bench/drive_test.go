package bench

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// Module names, used as sub-benchmark values (module=...) so benchstat can
// put the two side by side with -col /module.
const (
	passthrough = "passthrough"
	filter      = "filter"
)

// envWasmCache names a directory for wazero's compilation cache.
const envWasmCache = "TOKENBUDGET_WASM_CACHE"

// clock is the wall clock every VM of a host reads; frozen unless a
// benchmark advances it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// driver pushes requests through one host the way Envoy would: headers,
// the whole body in one chunk, the upstream's answer.
type driver struct {
	tb    testing.TB
	h     *host.Host
	clock *clock
}

// newDriver starts a one-worker host on module (passthrough or filter) with
// the plugin configuration config.
func newDriver(tb testing.TB, module, config string) *driver {
	tb.Helper()
	var wasm []byte
	switch module {
	case filter:
		wasm = wasmbuild.Filter(tb)
	case passthrough:
		wasm = passthroughModule(tb)
	default:
		tb.Fatalf("unknown module %q", module)
	}
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	h, err := host.New(context.Background(), host.Options{
		Module:       wasm,
		PluginConfig: []byte(config),
		RootID:       "tokenbudget",
		VMID:         "tokenbudget",
		PluginName:   "tokenbudget",
		Workers:      1,
		Now:          c.Now,
		LogLevel:     host.LevelInfo, // Envoy's default: lines below are not even formatted
		// The compiled machine code is kept across processes when asked, so a
		// run under valgrind does not spend its time compiling the module.
		CacheDir: os.Getenv(envWasmCache),
	})
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = h.Close(context.Background()) })
	return &driver{tb: tb, h: h, clock: c}
}

// exchange is one request and the upstream answer played back to it.
type exchange struct {
	key         string
	body        []byte
	contentType string   // of the response; application/json when empty
	chunks      [][]byte // response body chunks; the last ends the stream
}

// requestHeaders are the request's headers, built once per exchange so the
// benchmark loop measures the proxy, not header construction.
func (e exchange) requestHeaders() host.Headers {
	hs := host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
		{":scheme", "http"}, {"content-type", "application/json"}, {"content-length", strconv.Itoa(len(e.body))}}
	if e.key != "" {
		hs = append(hs, [2]string{"authorization", "Bearer " + e.key})
	}
	return hs
}

func (e exchange) responseHeaders() host.Headers {
	ct := e.contentType
	if ct == "" {
		ct = "application/json"
	}
	return host.Headers{{":status", "200"}, {"content-type", ct}}
}

// outcome is what the client saw, enough to tell an admitted request from
// a refused one.
type outcome struct {
	status  int
	headers host.Headers
	body    []byte
}

func (o outcome) header(name string) string { v, _ := o.headers.Get(name); return v }

// open runs the request side of e and reports a local reply, if any.
func (d *driver) open(e exchange, reqHdrs host.Headers) (*host.Stream, *host.LocalResponse) {
	s := d.h.NewStream(host.StreamInfo{Worker: 0, SourceAddress: "10.1.2.3:40000"})
	res := s.RequestHeaders(reqHdrs, false)
	if res.Action == host.LocalReply {
		return s, res.Local
	}
	res = s.RequestBody(e.body, true)
	if res.Action == host.Pause {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res = s.Wait(ctx)
		cancel()
	}
	if res.Action == host.LocalReply {
		return s, res.Local
	}
	if res.Action != host.Continue {
		d.tb.Fatalf("request side ended with %v", res.Action)
	}
	return s, nil
}

// respond plays the upstream answer back through an open stream.
func (d *driver) respond(s *host.Stream, e exchange, respHdrs host.Headers, out *outcome) {
	res := s.ResponseHeaders(respHdrs, false)
	if out != nil {
		out.status = 200
		out.headers = res.Headers
	}
	for i, ch := range e.chunks {
		res = s.ResponseBody(ch, i == len(e.chunks)-1)
		if out != nil {
			out.body = append(out.body, res.Body...)
		}
	}
}

// do runs one whole exchange, the unit the per-request benchmarks time.
func (d *driver) do(e exchange, reqHdrs, respHdrs host.Headers, out *outcome) {
	s, local := d.open(e, reqHdrs)
	defer s.Done()
	if local != nil {
		d.tb.Fatalf("refused with %d: %s", local.Status, local.Body)
	}
	d.respond(s, e, respHdrs, out)
}

// doOnce runs e and returns what the client saw, for the checks that the
// benchmarks measure what they claim to.
func (d *driver) doOnce(e exchange) outcome {
	var o outcome
	d.do(e, e.requestHeaders(), e.responseHeaders(), &o)
	return o
}

// prose is the padding text: letters, spaces and punctuation that JSON
// does not escape, so a body can be cut to an exact byte size.
const prose = "The filter reserves an estimate of the prompt and the output ceiling before the request " +
	"leaves the proxy, then settles the reservation against the usage the backend reports, so a " +
	"budget is charged what was really spent. Estimates err on the high side, by design, because " +
	"an under-count would let a tenant overspend. "

// code is chat content that JSON must escape (quotes, newlines, tabs).
const code = "func main() {\n\tfmt.Println(\"hello, world\")\n\tfor i := 0; i < 10; i++ {\n\t\tsum += i * i\n\t}\n}\n"

// chatBody is an OpenAI chat request of exactly size bytes: alternating
// prose and code messages, the last message padded with prose. stream adds
// "stream":true.
func chatBody(tb testing.TB, size int, stream bool) []byte {
	tb.Helper()
	return requestBody(tb, size, stream, func(i int) string {
		if i%3 == 2 {
			return strings.Repeat(code, 4)
		}
		return strings.Repeat(prose, 4)
	})
}

// codeBody is chatBody with code in every message but the padded last one.
func codeBody(tb testing.TB, size int) []byte {
	tb.Helper()
	return requestBody(tb, size, false, func(int) string { return strings.Repeat(code, 4) })
}

// requestBody is a chat request of exactly size bytes whose i-th message
// holds contentOf(i), the last one padded with prose.
func requestBody(tb testing.TB, size int, stream bool, contentOf func(i int) string) []byte {
	tb.Helper()
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type req struct {
		Model     string `json:"model"`
		Messages  []msg  `json:"messages"`
		MaxTokens int    `json:"max_tokens"`
		Stream    bool   `json:"stream,omitempty"`
	}
	r := req{Model: "gpt-4o", MaxTokens: 1024, Stream: stream}
	marshal := func() []byte {
		b, err := json.Marshal(r)
		require.NoError(tb, err)
		return b
	}
	for i := 0; ; i++ {
		r.Messages = append(r.Messages, msg{Role: "user", Content: contentOf(i)})
		if len(marshal()) > size-200 {
			r.Messages = r.Messages[:len(r.Messages)-1]
			break
		}
	}
	r.Messages = append(r.Messages, msg{Role: "user"})
	missing := size - len(marshal())
	require.GreaterOrEqual(tb, missing, 0)
	r.Messages[len(r.Messages)-1].Content = strings.Repeat(prose, missing/len(prose)+1)[:missing]
	b := marshal()
	require.Len(tb, b, size)
	return b
}

// chatResponse is a non-streamed chat completion with usage, about 300 B.
func chatResponse(prompt, completion int) []byte {
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1800000000,"model":"gpt-4o",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello! How can I help you today?"},` +
		`"finish_reason":"stop"}],"usage":{"prompt_tokens":` + strconv.Itoa(prompt) + `,"completion_tokens":` +
		strconv.Itoa(completion) + `,"total_tokens":` + strconv.Itoa(prompt+completion) + `}}`)
}

// streamChunks is a streamed OpenAI answer of n content events of about
// 100 B each, then the usage event and [DONE] in the last chunk.
func streamChunks(n int) [][]byte {
	out := make([][]byte, 0, n+1)
	for i := 0; i < n; i++ {
		out = append(out, []byte(`data: {"id":"c1","object":"chat.completion.chunk",`+
			`"choices":[{"index":0,"delta":{"content":"word "}}]}`+"\n\n"))
	}
	out = append(out, []byte(`data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":`+strconv.Itoa(n)+`,"total_tokens":`+strconv.Itoa(10+n)+`}}`+
		"\n\ndata: [DONE]\n\n"))
	return out
}
