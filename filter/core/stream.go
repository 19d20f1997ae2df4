package core

import (
	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/exchange"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/sharedstore"
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
	onAdmitted func(sharedstore.Outcome)

	store sharedstore.Store // the store of the config the request was admitted under
	// admitting is true inside store.Admit: an answer now is synchronous.
	admitting bool
	x         exchange.Exchange
}

func (s *Stream) host() abi.Host { return s.root.host }

// env is what the exchange reads from the root.
func (s *Stream) env() exchange.Env {
	r := s.root
	return exchange.Env{Config: r.rt, Keys: r.keys, Now: r.now, AnyClamp: r.anyClamp, Fleet: r.remote != nil}
}

func (s *Stream) OnRequestHeaders(numHeaders int, endOfStream bool) abi.Action {
	s.x.Begin(s.env()) // a stream is new, or was Reset when recycled
	a := s.x.RequestHeaders(requestView{s}, endOfStream)
	if s.x.Phase() != exchange.PhasePassThrough {
		s.store = s.root.store
	}
	return s.act(a)
}

func (s *Stream) OnRequestBody(bodySize int, endOfStream bool) abi.Action {
	return s.act(s.x.RequestBody(requestView{s}, bodySize, endOfStream))
}

func (s *Stream) OnRequestTrailers(numTrailers int) abi.Action { return abi.ActionContinue }

func (s *Stream) OnResponseHeaders(numHeaders int, endOfStream bool) abi.Action {
	s.root.headers = s.x.ResponseHeaders(responseView{s}, endOfStream, s.root.headers)
	s.run()
	return abi.ActionContinue
}

func (s *Stream) OnResponseBody(bodySize int, endOfStream bool) abi.Action {
	s.x.ResponseBody(responseView{s}, bodySize, endOfStream)
	s.run()
	return abi.ActionContinue
}

func (s *Stream) OnResponseTrailers(numTrailers int) abi.Action {
	s.x.ResponseTrailers()
	s.run()
	return abi.ActionContinue
}

// OnLog comes before OnDone: see exchange.Exchange.Log.
func (s *Stream) OnLog() {
	s.x.Log()
	s.run()
}

// OnDone is the host's word that the stream is over.
func (s *Stream) OnDone() {
	s.x.Done()
	s.run()
}

func (s *Stream) OnDelete() {
	s.x.Deleted()
	delete(s.root.streams, s.id)
	s.root.recycle(s)
}

// act carries out the effects of a request event and answers the host.
func (s *Stream) act(a exchange.Action) abi.Action {
	s.run()
	if a == exchange.AfterAdmission {
		a = s.x.Admission()
	}
	if a == exchange.Continue {
		return abi.ActionContinue
	}
	return abi.ActionPause
}

// admitted receives the store's answer, synchronously from the shared-data
// backend or later from the remote backend's callout response.
func (s *Stream) admitted(o sharedstore.Outcome) {
	async := !s.admitting
	if async && s.x.Phase() != exchange.PhaseDone {
		s.host().SetEffectiveContext(s.id)
	}
	s.x.Admitted(o, async)
	s.run()
}

// run carries out the exchange's pending effects in order. An admission
// answered within store.Admit feeds the exchange again; the effects that
// answer yields are carried out by the nested run before Admit returns.
func (s *Stream) run() {
	for e := s.x.Next(); e != nil; e = s.x.Next() {
		s.apply(e)
	}
}

func (s *Stream) apply(e *exchange.Effect) {
	h, m := s.host(), s.root.metrics
	switch e.Kind {
	case exchange.RemoveRequestHeader:
		h.RemoveHeader(abi.MapRequestHeaders, e.Name)
	case exchange.SetRequestBody:
		h.SetBuffer(abi.BufferRequestBody, 0, e.Size, e.Body)
	case exchange.LocalReply:
		h.SendLocalResponse(e.Size, "tokenbudget", e.Body, headerPairs(e.Headers))
	case exchange.Admit:
		if e.Retry {
			s.store.Admit(*e.Plan, s.onAdmitted) // keeps the first admission's timing
			return
		}
		s.admitting = true
		s.store.Admit(*e.Plan, s.onAdmitted)
		s.admitting = false
	case exchange.ResumeRequest:
		h.ContinueStream(abi.StreamRequest)
	case exchange.Settle:
		s.store.Settle(*e.Hold, e.Tokens)
	case exchange.Release:
		s.store.Release(*e.Hold)
	case exchange.SetResponseHeaders:
		for _, hd := range e.Headers {
			h.ReplaceHeader(abi.MapResponseHeaders, hd.Name, hd.Value)
		}
	case exchange.SetResponseBody:
		h.SetBuffer(abi.BufferResponseBody, 0, e.Size, e.Body)
	case exchange.RecordDecision:
		h.SetFilterState(FilterStateName, e.Body)
	case exchange.CountRequest:
		m.request(e.Name)
	case exchange.CountSkipped:
		m.skipped(e.Name)
	case exchange.CountFailOpen:
		m.failOpen(e.Name)
	case exchange.CountTokens:
		m.tokens(e.Entry, e.Name, e.Tokens)
	case exchange.CountRefusal:
		m.refusal(*e.Refusal, e.Value)
	case exchange.CountShadowRefusal:
		m.shadowRefusal(e.Value, e.Name)
	case exchange.CountSpendRefusal:
		m.spendRefusal(e.Exceeded)
	case exchange.CountSpendUSD:
		m.spendUSD(e.Policy, money.Amount(e.Tokens))
	}
}

func headerPairs(headers []refusal.Header) [][2]string {
	hs := make([][2]string, len(headers))
	for i, h := range headers {
		hs[i] = [2]string{h.Name, h.Value}
	}
	return hs
}

// requestView reads the request through the host.
type requestView struct{ s *Stream }

func (v requestView) Header(name string) (string, bool) {
	val, st := v.s.host().GetHeader(abi.MapRequestHeaders, name)
	return val, st == abi.StatusOK
}

func (v requestView) Headers() [][2]string {
	pairs, _ := v.s.host().GetHeaders(abi.MapRequestHeaders)
	return pairs
}

func (v requestView) Property(path ...string) ([]byte, bool) {
	val, st := v.s.host().GetProperty(path...)
	return val, st == abi.StatusOK
}

func (v requestView) Body(size int) ([]byte, bool) {
	b, st := v.s.host().GetBuffer(abi.BufferRequestBody, 0, size)
	return b, st == abi.StatusOK
}

// responseView reads the response through the host.
type responseView struct{ s *Stream }

func (v responseView) Header(name string) (string, bool) {
	val, st := v.s.host().GetHeader(abi.MapResponseHeaders, name)
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
