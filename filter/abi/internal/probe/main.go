// Command probe is a test module that calls every Host method through the
// real wasm binding and logs what came back, so filter/abi's tests can check
// the imports, out-parameters, memory hand-over and pair encoding end to end
// in the wazero host (envoy/host). It is not shipped.
package main

import (
	"strconv"
	"strings"

	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

func init() { abi.SetVMContext(&vm{}) }

func main() {}

func log(parts ...string) { abi.CurrentHost().Log(abi.LogInfo, strings.Join(parts, " ")) }

func st(s abi.Status) string { return s.String() }

func u(n uint64) string { return strconv.FormatUint(n, 10) }

// config reads a configuration buffer, or says why it could not.
func config(b abi.BufferType, size int) string {
	c, err := abi.Configuration(abi.CurrentHost(), b, size)
	if err != nil {
		return err.Error()
	}
	return string(c)
}

type vm struct{ types.DefaultVMContext }

func (*vm) OnVMStart(size int) types.OnVMStartStatus {
	log("vm_config=" + config(abi.BufferVMConfiguration, size))
	return types.OnVMStartStatusOK
}

func (*vm) NewPluginContext(uint32) types.PluginContext { return &root{h: abi.CurrentHost()} }

// root refuses the plugin configuration "reject"; a callout's answer
// resumes the stream that made it.
type root struct {
	types.DefaultPluginContext
	h      abi.Host
	store  uint32 // token of the callout to cluster store
	paused uint32 // the stream that waits for it
}

func (r *root) OnPluginStart(size int) types.OnPluginStartStatus {
	c := config(abi.BufferPluginConfiguration, size)
	log("plugin_config=" + c)
	return c != "reject"
}

func (r *root) OnTick() { log("tick") }

func (r *root) OnHTTPCallResponse(token uint32, nh, bs, nt int) {
	status, s1 := r.h.GetHeader(abi.MapHTTPCallResponseHeaders, ":status")
	answer, _ := r.h.GetHeader(abi.MapHTTPCallResponseHeaders, "x-answer")
	b, s2 := r.h.GetBuffer(abi.BufferHTTPCallResponseBody, 0, bs)
	code, msg := r.h.GetStatus()
	log("callout", strconv.FormatBool(token == r.store), status, st(s1), answer, string(b), st(s2), u(uint64(code)), msg)
	if token == r.store {
		log("continue", st(r.h.SetEffectiveContext(r.paused)), st(r.h.ContinueStream(abi.StreamRequest)))
	}
}

func (r *root) NewHttpContext(id uint32) types.HttpContext { return &stream{root: r, id: id} }

type stream struct {
	types.DefaultHttpContext
	root  *root
	id    uint32
	local bool // answered by the proxy
}

func joinPairs(ps [][2]string) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p[0] + "=" + p[1] + ";")
	}
	return b.String()
}

// sink keeps the stress loop's garbage reachable until the next round.
var sink []byte

func (s *stream) OnHttpRequestHeaders(n int, end bool) types.Action {
	h := s.root.h
	path, s1 := h.GetHeader(abi.MapRequestHeaders, ":path")
	if path == "/local" {
		s.local = true
		log("local_response", st(h.SendLocalResponse(429, "probe_limited", []byte(`{"error":"slow down"}`),
			[][2]string{{"retry-after", "3"}})))
		return types.ActionPause
	}
	_, s2 := h.GetHeader(abi.MapRequestHeaders, "absent")
	log("path", path, st(s1), st(s2), u(uint64(n)), strconv.FormatBool(end))
	log("add", st(h.AddHeader(abi.MapRequestHeaders, "x-probe", "yes")),
		st(h.ReplaceHeader(abi.MapRequestHeaders, "x-replace", "new")),
		st(h.RemoveHeader(abi.MapRequestHeaders, "x-remove")))
	hs, s3 := h.GetHeaders(abi.MapRequestHeaders)
	log("headers", joinPairs(hs), st(s3))

	seed := h.SetSharedData("counter", []byte("n"), 0)
	v, cas, s4 := h.GetSharedData("counter")
	set := h.SetSharedData("counter", append(v, '+'), cas)
	stale := h.SetSharedData("counter", []byte("stale"), cas)
	v2, cas2, _ := h.GetSharedData("counter")
	log("shared", st(seed), string(v), st(s4), st(set), st(stale), string(v2), strconv.FormatBool(cas2 != cas))

	p, s5 := h.GetProperty("source", "address")
	_, s6 := h.GetProperty("missing")
	log("property", string(p), st(s5), st(s6))
	log("now", strconv.FormatInt(h.NowNanos(), 10))

	id, s7 := h.DefineMetric(abi.MetricCounter, "probe_requests")
	inc := h.IncrementMetric(id, 2)
	rec := h.RecordMetric(id, 3)
	mv, s8 := h.GetMetric(id)
	log("metric", st(s7), st(inc), st(rec), u(mv), st(s8))

	req := [][2]string{{":method", "POST"}, {":path", "/reserve"}, {":authority", "store"}}
	tok, s9 := h.HTTPCall("store", req, []byte("ping"), 5000)
	_, s10 := h.HTTPCall("down", req, nil, 5000)
	_, s11 := h.HTTPCall("store", nil, nil, 0)
	s.root.store, s.root.paused = tok, s.id
	log("callout_sent", u(uint64(tok)), st(s9), st(s10), st(s11))
	log("tick_period", st(h.SetTickPeriod(1000)))

	// Many host-returned values in a row, each checked, with garbage in
	// between, so a buffer the GC reclaimed or a mixed-up hand-over shows
	// up as a mismatch.
	bad := 0
	for i := 0; i < 300; i++ {
		sink = make([]byte, 64<<10)
		got, _ := h.GetHeaders(abi.MapRequestHeaders)
		if joinPairs(got) != joinPairs(hs) {
			bad++
		}
		if v, _ := h.GetHeader(abi.MapRequestHeaders, ":path"); v != path {
			bad++
		}
	}
	log("stress", u(uint64(bad)))
	return types.ActionPause
}

func (s *stream) OnHttpRequestBody(size int, end bool) types.Action {
	h := s.root.h
	b, s1 := h.GetBuffer(abi.BufferRequestBody, 2, 3)
	log("body", u(uint64(size)), string(b), st(s1), st(h.SetBuffer(abi.BufferRequestBody, 100, 0, []byte("!"))))
	return types.ActionContinue
}

func (s *stream) OnHttpResponseHeaders(int, bool) types.Action {
	if !s.local {
		panic("probe panic")
	}
	return types.ActionContinue
}

func (s *stream) OnHttpStreamDone() { log("on_log") }
