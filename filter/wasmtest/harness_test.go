// Package wasmtest runs the compiled build/filter.wasm in the Envoy-faithful
// wazero host: every rule that crosses the ABI is pinned here, with two
// worker VMs sharing proxy shared data as Envoy's workers do.
package wasmtest

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// clock is the injected wall clock every VM of a host reads.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t     testing.TB
	h     *host.Host
	clock *clock
}

type hopt func(*host.Options)

func withWorkers(n int) hopt          { return func(o *host.Options) { o.Workers = n } }
func withProfile(p host.Profile) hopt { return func(o *host.Options) { o.Profile = p } }

// envProfile is the cpp-host profile the suite runs on: host.EnvProfile names it (CI runs the
// suite once per profile), unset is the strictest.
func envProfile(t testing.TB) host.Profile {
	t.Helper()
	p, err := host.ProfileFromEnv()
	require.NoError(t, err)
	return p
}
func withClusters(c map[string]string) hopt {
	return func(o *host.Options) { o.Clusters = c }
}

func newHarness(t testing.TB, config string, opts ...hopt) *harness {
	t.Helper()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	o := host.Options{
		Module:       wasmbuild.Filter(t),
		PluginConfig: []byte(config),
		RootID:       "tokenbudget",
		VMID:         "tokenbudget",
		PluginName:   "tokenbudget",
		Workers:      2,
		Profile:      envProfile(t),
		Now:          c.Now,
		LogLevel:     host.LevelInfo,
		StatsTags:    statsTags(),
	}
	for _, f := range opts {
		f(&o)
	}
	h, err := host.New(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return &harness{t: t, h: h, clock: c}
}

func statsTags() []host.StatsTag {
	var tags []host.StatsTag
	for _, r := range metrics.TagRules() {
		tags = append(tags, host.StatsTag{TagName: r.Name, Regex: r.Regex})
	}
	return tags
}

// call is one request and the upstream answer the test plays back.
type call struct {
	path    string
	key     string
	headers host.Headers
	body    string
	worker  int
	source  string

	// upstream answer (ignored when the filter replies locally)
	status      int
	contentType string
	respHeaders host.Headers
	chunks      []string // response body chunks; the last ends the stream
	cut         bool     // stream reset after the chunks, before the end
}

// reply is what the client sees.
type reply struct {
	status  int
	headers host.Headers
	body    []byte
	local   bool
	// upstreamBody is the request body the filter forwarded upstream.
	upstreamBody []byte
	upstreamHdrs host.Headers
	// decision is the filter state the filter recorded for the access log.
	decision map[string]any
}

func (r reply) header(name string) string { v, _ := r.headers.Get(name); return v }

func (r reply) json(t testing.TB) map[string]any {
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), string(r.body))
	return m
}

func (x *harness) do(c call) reply {
	x.t.Helper()
	if c.worker == 0 {
		c.worker = -1
	}
	return x.doOn(c.worker, c)
}

// doOn is do on worker w, where do's zero worker means round robin (-1
// here), so that worker 0 can be named.
func (x *harness) doOn(w int, c call) reply {
	x.t.Helper()
	if c.path == "" {
		c.path = "/v1/chat/completions"
	}
	if c.source == "" {
		c.source = "10.1.2.3:40000"
	}
	s := x.h.NewStream(host.StreamInfo{Worker: w, SourceAddress: c.source})
	out := x.play(s, c)
	s.Done()
	if v, ok := s.FilterState("tokenbudget"); ok {
		require.NoError(x.t, json.Unmarshal(v, &out.decision), string(v))
	}
	return out
}

// play plays one request and its answer on s, which it leaves open.
func (x *harness) play(s *host.Stream, c call) reply {
	hs := host.Headers{{":method", "POST"}, {":path", c.path}, {":authority", "llm"}, {":scheme", "http"},
		{"content-type", "application/json"}, {"content-length", strconv.Itoa(len(c.body))}}
	if c.key != "" {
		hs = append(hs, [2]string{"authorization", "Bearer " + c.key})
	}
	hs = append(hs, c.headers...)
	var out reply
	res := s.RequestHeaders(hs, c.body == "")
	if r, done := x.settled(s, res, &out); done {
		return r
	}
	out.upstreamHdrs = res.Headers
	if c.body != "" {
		res = s.RequestBody([]byte(c.body), true)
		out.upstreamBody = append(out.upstreamBody, res.Body...)
		if r, done := x.settled(s, res, &out); done {
			return r
		}
		if res.Action == host.Pause {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res = s.Wait(ctx)
			cancel()
			out.upstreamBody = append(out.upstreamBody, res.Body...)
			if r, done := x.settled(s, res, &out); done {
				return r
			}
		}
	}
	// Upstream answers.
	status := c.status
	if status == 0 {
		status = 200
	}
	ct := c.contentType
	if ct == "" {
		ct = "application/json"
	}
	rh := host.Headers{{":status", strconv.Itoa(status)}, {"content-type", ct}}
	rh = append(rh, c.respHeaders...)
	res = s.ResponseHeaders(rh, len(c.chunks) == 0)
	out.status = status
	out.headers = res.Headers
	if out.headers == nil {
		out.headers = rh
	}
	for i, ch := range c.chunks {
		end := i == len(c.chunks)-1 && !c.cut
		res = s.ResponseBody([]byte(ch), end)
		out.body = append(out.body, res.Body...)
	}
	return out
}

// settled reports a local reply (the filter answered instead of upstream).
func (x *harness) settled(s *host.Stream, res host.Result, out *reply) (reply, bool) {
	if res.Action != host.LocalReply {
		return reply{}, false
	}
	require.NotNil(x.t, res.Local)
	out.status, out.headers, out.body, out.local = res.Local.Status, res.Local.Headers, res.Local.Body, true
	return *out, true
}

// metric reads a counter by its series name (labels folded as metrics.Name
// does), after a tick has handed the host the increments the guest sums
// between ticks.
func (x *harness) metric(family string, pairs ...string) int64 {
	x.h.Tick()
	v, ok := x.h.Metric(metrics.Name(family, pairs...))
	if !ok {
		return 0
	}
	return int64(v)
}

// The request and answer bodies are the shared case table's.
var (
	chatBody     = ChatBody
	chatResponse = ChatResponse
)
