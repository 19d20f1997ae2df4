package core

import (
	"unsafe"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/exchange"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/sharedstore"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
)

// FilterStateName is the filter-state name the decision of each metered
// request is stored under: Envoy keeps it as "wasm.tokenbudget", which an
// access log prints with %FILTER_STATE(wasm.tokenbudget:PLAIN)%.
const FilterStateName = "tokenbudget"

// Stream is one HTTP request through the filter: the adapter between the
// host's callbacks and an exchange.Exchange, which holds every rule. A
// callback becomes an event; the effects the event yields become host
// calls, store calls and metric increments.
type Stream struct {
	root *Root
	id   uint32
	// onAdmitted is s.admitted, bound once: a method value handed to the
	// store allocates each time it is taken.
	onAdmitted func(limit.Outcome)

	store sharedstore.Store // the store of the config the request was admitted under
	// admitting is true inside store.Admit: an answer now is kept in
	// answer, answered set, and Admit returns it to the exchange.
	admitting, answered bool
	answer              limit.Outcome
	x                   exchange.Exchange

	// spare is lent to each admission by the shared-data store for its
	// outcome's levels and hold entries. The stream is recycled only once
	// its hold has ended, so the next request's admission may reuse it.
	spare local.Spare

	// listed is the header map read whole in this callback, so every
	// header the exchange reads costs one host call between them;
	// listedMap says which map, isListed whether one was read yet. Its
	// array is kept for the next listing (a recycled stream's too): the
	// exchange keeps views of the header strings, never of the list.
	listed    [][2]string
	listedMap abi.MapType
	isListed  bool
	// added is the success headers SetResponseHeaders wrote with the
	// response listed: the listing then holds the response's own headers
	// that stayed, and a read of one of added's names answers from here.
	added []refusal.Header
}

func (s *Stream) host() abi.Host { return s.root.host }

// env is what the exchange reads from the root.
func (s *Stream) env() exchange.Env {
	r := s.root
	return exchange.Env{Config: r.rt, Effects: (*effects)(s), Facts: r.metrics, Keys: r.keys, Now: r.now, AnyClamp: r.anyClamp,
		Fleet: r.remote != nil}
}

func (s *Stream) OnHttpRequestHeaders(numHeaders int, endOfStream bool) abi.Action {
	s.x.Begin(s.env()) // a stream is new, or was Reset when recycled
	a := s.x.RequestHeaders(requestView{s}, endOfStream)
	s.isListed = false
	if s.x.Phase() != exchange.PhasePassThrough {
		s.store = s.root.store
	}
	return s.act(a)
}

func (s *Stream) OnHttpRequestBody(bodySize int, endOfStream bool) abi.Action {
	return s.act(s.x.RequestBody(requestView{s}, bodySize, endOfStream))
}

func (s *Stream) OnHttpRequestTrailers(numTrailers int) abi.Action { return abi.ActionContinue }

func (s *Stream) OnHttpResponseHeaders(numHeaders int, endOfStream bool) abi.Action {
	s.x.ResponseHeaders(responseView{s}, endOfStream, &s.root.headers)
	s.isListed = false
	return abi.ActionContinue
}

func (s *Stream) OnHttpResponseBody(bodySize int, endOfStream bool) abi.Action {
	s.x.ResponseBody(responseView{s}, bodySize, endOfStream)
	return abi.ActionContinue
}

func (s *Stream) OnHttpResponseTrailers(numTrailers int) abi.Action {
	s.x.ResponseTrailers()
	return abi.ActionContinue
}

// OnHttpStreamDone is proxy_on_log, which comes before OnDone: see
// exchange.Exchange.Log.
func (s *Stream) OnHttpStreamDone() {
	s.x.Log()
}

// OnDone is the host's word that the stream is over.
func (s *Stream) OnDone() {
	s.x.Done()
}

func (s *Stream) OnDelete() {
	s.x.Deleted()
	s.root.recycle(s)
}

// act answers the host for a request event, whose effects are done.
func (s *Stream) act(a exchange.Action) abi.Action {
	if a == exchange.AfterAdmission {
		a = s.x.Admission()
	}
	if a == exchange.Continue {
		return abi.ActionContinue
	}
	return abi.ActionPause
}

// admitted receives the store's answer: within store.Admit from the
// shared-data backend (or a fleet store whose call could not leave), kept
// for Admit to return; later from the remote backend's callout response,
// an event for the exchange.
func (s *Stream) admitted(o limit.Outcome) {
	if s.admitting {
		s.answer, s.answered = o, true
		return
	}
	if s.x.Phase() != exchange.PhaseDone {
		s.host().SetEffectiveContext(s.id)
	}
	s.x.Admitted(&o)
}

// effects carries out a stream's exchange.Effects: host calls, store calls
// and metric increments. None calls back into the exchange: an admission
// answered within store.Admit is returned from Admit.
type effects Stream

func (f *effects) RemoveRequestHeader(name string) {
	f.root.host.RemoveHeader(abi.MapRequestHeaders, name)
}

func (f *effects) SetRequestBody(size int, body []byte) {
	f.root.host.SetBuffer(abi.BufferRequestBody, 0, size, body)
}

func (f *effects) LocalReply(status int, body []byte, headers []refusal.Header) {
	f.root.host.SendLocalResponse(status, "tokenbudget", body, headerPairs(headers))
}

func (f *effects) Admit(plan *limit.Plan, retry bool) *limit.Outcome {
	s := (*Stream)(f)
	s.admitting, s.answered = true, false
	if ls, ok := s.store.(*local.Store); ok {
		ls.AdmitWith(*plan, &s.spare, s.onAdmitted)
	} else {
		s.store.Admit(*plan, s.onAdmitted)
	}
	s.admitting = false
	if !s.answered {
		return nil // a callout's answer comes as an event
	}
	return &s.answer
}

func (f *effects) ResumeRequest() { f.root.host.ContinueStream(abi.StreamRequest) }

func (f *effects) Settle(hold *limit.Hold, tokens int64) { f.store.Settle(*hold, tokens) }

func (f *effects) Release(hold *limit.Hold) { f.store.Release(*hold) }

// SetResponseHeaders writes the success headers, each replacing every
// value of its name. Through a HeaderAdder that is two host calls whatever
// their number, and the response's own headers that stayed are then listed
// for the exchange's four reads, which come next in the callback and so
// cost no call either (BENCHMARKS.md, "Measured, not kept", has what each part costs).
func (f *effects) SetResponseHeaders(headers []refusal.Header) {
	s := (*Stream)(f)
	if ad := s.root.adder; ad != nil {
		listed, st := ad.AddHeaders(s.listed[:0], abi.MapResponseHeaders, asPairs(headers))
		if st == abi.StatusOK {
			s.listed, s.listedMap, s.isListed, s.added = listed, abi.MapResponseHeaders, true, headers
			return
		}
	}
	h := f.root.host
	for _, hd := range headers {
		h.ReplaceHeader(abi.MapResponseHeaders, hd.Name, hd.Value)
	}
}

// A refusal.Header is an abi.Pair: the conversion compiles only while the
// two types have the same fields, which asPairs relies on.
var _ = abi.Pair(refusal.Header{})

// asPairs views headers as pairs, without a copy.
func asPairs(headers []refusal.Header) []abi.Pair {
	return unsafe.Slice((*abi.Pair)(unsafe.Pointer(unsafe.SliceData(headers))), len(headers))
}

func (f *effects) SetResponseBody(size int, body []byte) {
	f.root.host.SetBuffer(abi.BufferResponseBody, 0, size, body)
}

func (f *effects) RecordDecision(body []byte) { f.root.host.SetFilterState(FilterStateName, body) }

func headerPairs(headers []refusal.Header) [][2]string {
	hs := make([][2]string, len(headers))
	for i, h := range headers {
		hs[i] = [2]string{h.Name, h.Value}
	}
	return hs
}

// headers is header map m, read whole on the callback's first header read:
// identification reads the request's map whole anyway, so :path and the
// other request headers come from the same listing, not a host call each.
func (s *Stream) headers(m abi.MapType) [][2]string {
	if !s.isListed || s.listedMap != m {
		if sr := s.root.scratch; sr != nil {
			s.listed, _ = sr.AppendHeaders(s.listed[:0], m)
		} else {
			s.listed, _ = s.host().GetHeaders(m)
		}
		s.isListed, s.listedMap = true, m
	}
	return s.listed
}

// firstHeader is the first value of header name in map m, as the host's
// own lookup answers.
func (s *Stream) firstHeader(m abi.MapType, name string) (string, bool) {
	for _, h := range s.headers(m) {
		if h[0] == name {
			return h[1], true
		}
	}
	return "", false
}

// requestView reads the request through the host.
type requestView struct{ s *Stream }

func (v requestView) Header(name string) (string, bool) {
	return v.s.firstHeader(abi.MapRequestHeaders, name)
}

func (v requestView) Headers() [][2]string { return v.s.headers(abi.MapRequestHeaders) }

func (v requestView) Property(path ...string) ([]byte, bool) {
	val, st := v.s.host().GetProperty(path...)
	return val, st == abi.StatusOK
}

// Body reads the body into the host's scratch buffer when it has one: the
// exchange estimates and rewrites it within the callback and keeps none of
// it (exchange.Request), so a body costs no guest allocation.
func (v requestView) Body(size int) ([]byte, bool) {
	var b []byte
	var st abi.Status
	if sr := v.s.root.scratch; sr != nil {
		b, st = sr.GetBufferScratch(abi.BufferRequestBody, 0, size)
	} else {
		b, st = v.s.host().GetBuffer(abi.BufferRequestBody, 0, size)
	}
	return b, st == abi.StatusOK
}

// responseView reads the response. After SetResponseHeaders wrote the
// success headers through a HeaderAdder, the map is already listed and the
// reads cost no host call. Otherwise a header is read through the host one
// at a time (the exchange reads four, and listing the map only to read them
// cost more instructions in the VM than the three host calls it saved),
// into the host's scratch buffer when it has one: the exchange decides on
// each value before it reads the next (exchange.Response), so no read costs
// a guest allocation.
type responseView struct{ s *Stream }

func (v responseView) Header(name string) (string, bool) {
	if s := v.s; s.isListed && s.listedMap == abi.MapResponseHeaders {
		// The map as SetResponseHeaders wrote it: the listed headers
		// that stayed, then the success headers.
		if refusal.MayWrite(name) {
			for _, h := range s.added {
				if h.Name == name {
					return h.Value, true
				}
			}
		}
		return s.firstHeader(abi.MapResponseHeaders, name)
	}
	var val string
	var st abi.Status
	if sr := v.s.root.scratch; sr != nil {
		val, st = sr.GetHeaderScratch(abi.MapResponseHeaders, name)
	} else {
		val, st = v.s.host().GetHeader(abi.MapResponseHeaders, name)
	}
	return val, st == abi.StatusOK
}

// Chunk reads the chunk into the host's scratch buffer when the exchange
// allows it and the host has one: nothing holds the chunk past the callback.
func (v responseView) Chunk(size int, scratch bool) ([]byte, bool) {
	var c []byte
	var st abi.Status
	if sr := v.s.root.scratch; scratch && sr != nil {
		c, st = sr.GetBufferScratch(abi.BufferResponseBody, 0, size)
	} else {
		c, st = v.s.host().GetBuffer(abi.BufferResponseBody, 0, size)
	}
	return c, st == abi.StatusOK
}
