// Command probe is a test module that calls every Host method through the
// real wasm binding and logs what came back, so filter/abi's tests can check
// the imports, out-parameters, memory hand-over and pair encoding end to end
// against a known host. It is not shipped.
package main

import (
	"strconv"
	"strings"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

func init() {
	abi.SetRootContextFactory(func(id uint32, h abi.Host) abi.RootContext { return &root{h: h} })
}

func main() {}

type root struct{ h abi.Host }

func (r *root) log(parts ...string) { r.h.Log(abi.LogInfo, strings.Join(parts, " ")) }

func st(s abi.Status) string { return s.String() }

func u(n uint64) string { return strconv.FormatUint(n, 10) }

func (r *root) OnVMStart(c []byte) bool { r.log("vm_config=" + string(c)); return true }

func (r *root) OnConfigure(c []byte) bool {
	r.log("plugin_config=" + string(c))
	return string(c) != "reject"
}

func (r *root) OnTick() { r.log("tick") }

func (r *root) OnHTTPCallResponse(token uint32, nh, bs, nt int) {
	hs, s1 := r.h.GetHeaders(abi.MapHTTPCallResponseHeaders)
	b, s2 := r.h.GetBuffer(abi.BufferHTTPCallResponseBody, 0, bs)
	code, msg := r.h.GetStatus()
	r.log("callout", u(uint64(token)), u(uint64(nh)), joinPairs(hs), st(s1), string(b), st(s2), u(uint64(code)), msg)
	r.log("continue", st(r.h.SetEffectiveContext(2)), st(r.h.ContinueStream(abi.StreamRequest)))
}

func (r *root) NewHTTPContext(id uint32) abi.HTTPContext { return &stream{root: r} }
func (r *root) OnDone() bool                             { return true }
func (r *root) OnDelete()                                {}

type stream struct{ root *root }

func joinPairs(ps [][2]string) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p[0] + "=" + p[1] + ";")
	}
	return b.String()
}

func (s *stream) OnRequestHeaders(n int, end bool) abi.Action {
	h, log := s.root.h, s.root.log
	path, s1 := h.GetHeader(abi.MapRequestHeaders, ":path")
	_, s2 := h.GetHeader(abi.MapRequestHeaders, "absent")
	log("path", path, st(s1), st(s2), u(uint64(n)), strconv.FormatBool(end))
	log("add", st(h.AddHeader(abi.MapRequestHeaders, "x-probe", "yes")),
		st(h.ReplaceHeader(abi.MapRequestHeaders, "x-replace", "new")),
		st(h.RemoveHeader(abi.MapRequestHeaders, "x-remove")))
	hs, s3 := h.GetHeaders(abi.MapRequestHeaders)
	log("headers", joinPairs(hs), st(s3))

	v, cas, s4 := h.GetSharedData("counter")
	set := h.SetSharedData("counter", append(v, '+'), cas)
	stale := h.SetSharedData("counter", []byte("stale"), cas)
	v2, cas2, _ := h.GetSharedData("counter")
	log("shared", string(v), u(uint64(cas)), st(s4), st(set), st(stale), string(v2), u(uint64(cas2)))

	p, s5 := h.GetProperty("source", "address")
	_, s6 := h.GetProperty("missing")
	log("property", string(p), st(s5), st(s6))
	log("now", strconv.FormatInt(h.NowNanos(), 10))

	id, s7 := h.DefineMetric(abi.MetricCounter, "probe_requests")
	inc := h.IncrementMetric(id, 2)
	rec := h.RecordMetric(id, 3)
	mv, s8 := h.GetMetric(id)
	log("metric", st(s7), st(inc), st(rec), u(mv), st(s8))

	tok, s9 := h.HTTPCall("store", [][2]string{{":method", "POST"}, {":path", "/reserve"}, {":authority", "store"}}, []byte("ping"), 250)
	_, s10 := h.HTTPCall("store", nil, nil, 0)
	log("callout_sent", u(uint64(tok)), st(s9), st(s10))

	b, s11 := h.GetBuffer(abi.BufferRequestBody, 2, 3)
	log("body", string(b), st(s11), st(h.SetBuffer(abi.BufferRequestBody, 100, 0, []byte("!"))))
	log("tick_period", st(h.SetTickPeriod(1000)))

	// Many host-returned values in a row, each checked, so a buffer the GC
	// reclaimed or a mixed-up hand-over shows up as a mismatch.
	bad := 0
	for i := 0; i < 300; i++ {
		got, _ := h.GetHeaders(abi.MapRequestHeaders)
		if joinPairs(got) != joinPairs(hs) {
			bad++
		}
		if v, _ := h.GetHeader(abi.MapRequestHeaders, ":path"); v != path {
			bad++
		}
	}
	log("stress", u(uint64(bad)))
	return abi.ActionPause
}

func (s *stream) OnRequestBody(size int, end bool) abi.Action {
	s.root.log("local_response", st(s.root.h.SendLocalResponse(429, "probe_limited", []byte(`{"error":"slow down"}`),
		[][2]string{{"retry-after", "3"}})))
	return abi.ActionPause
}
func (s *stream) OnRequestTrailers(int) abi.Action       { return abi.ActionContinue }
func (s *stream) OnResponseHeaders(int, bool) abi.Action { return abi.ActionContinue }
func (s *stream) OnResponseBody(int, bool) abi.Action    { return abi.ActionContinue }
func (s *stream) OnResponseTrailers(int) abi.Action      { panic("probe panic") }
func (s *stream) OnLog()                                 { s.root.log("on_log") }
func (s *stream) OnDone()                                {}
func (s *stream) OnDelete()                              {}
