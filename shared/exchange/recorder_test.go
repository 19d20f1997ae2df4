package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// The tests see an exchange's effects as a list: a recorder is its Effects,
// and each call becomes one Effect, in order.

// EffectKind says which Effects method was called.
type EffectKind uint8

const (
	RemoveRequestHeader EffectKind = iota + 1
	SetRequestBody
	LocalReply
	Admit
	ResumeRequest
	Settle
	Release
	SetResponseHeaders
	SetResponseBody
	RecordDecision
	CountRequest
	CountSkipped
	CountFailOpen
	CountTokens
	CountRefusal
	CountShadowRefusal
	CountSpendRefusal
	CountSpendUSD
)

// Effect is one recorded call. Name is the header RemoveRequestHeader
// removes; for a fact, Name is its label (the outcome of CountRequest and
// CountTokens, the dimension of CountSkipped and CountShadowRefusal, the
// reason of CountFailOpen) and Value the limit type (CountRefusal,
// CountShadowRefusal). Size is the bytes a body replaces, or the local
// reply's status; Tokens what Settle charges or CountTokens moves, and
// CountSpendUSD's cost in nano-USD.
type Effect struct {
	Kind        EffectKind
	Retry       bool
	Exceeded    spend.Exceeded
	Name, Value string
	Body        []byte
	Size        int
	Headers     []refusal.Header
	Tokens      int64
	Plan        *limit.Plan
	Hold        *limit.Hold
	Entry       *limit.HoldEntry
	Refusal     *limit.Refusal
	Policy      *spend.Policy
}

// recorder keeps the effects not yet drained. store, when set, answers
// each Admit within the call, as a shared-data store does; otherwise Admit
// is answered later, by the test.
type recorder struct {
	q     []Effect
	store func(plan *limit.Plan) *limit.Outcome
}

func (r *recorder) add(e Effect) { r.q = append(r.q, e) }

func (r *recorder) RemoveRequestHeader(name string) {
	r.add(Effect{Kind: RemoveRequestHeader, Name: name})
}
func (r *recorder) SetRequestBody(size int, body []byte) {
	r.add(Effect{Kind: SetRequestBody, Size: size, Body: append([]byte(nil), body...)})
}
func (r *recorder) LocalReply(status int, body []byte, headers []refusal.Header) {
	r.add(Effect{Kind: LocalReply, Size: status, Body: body, Headers: headers})
}
func (r *recorder) Admit(plan *limit.Plan, retry bool) *limit.Outcome {
	r.add(Effect{Kind: Admit, Plan: plan, Retry: retry})
	if r.store == nil {
		return nil
	}
	return r.store(plan)
}
func (r *recorder) ResumeRequest() { r.add(Effect{Kind: ResumeRequest}) }
func (r *recorder) Settle(hold *limit.Hold, tokens int64) {
	r.add(Effect{Kind: Settle, Hold: hold, Tokens: tokens})
}
func (r *recorder) Release(hold *limit.Hold) { r.add(Effect{Kind: Release, Hold: hold}) }
func (r *recorder) SetResponseHeaders(headers []refusal.Header) {
	r.add(Effect{Kind: SetResponseHeaders, Headers: append([]refusal.Header(nil), headers...)})
}
func (r *recorder) SetResponseBody(size int, body []byte) {
	r.add(Effect{Kind: SetResponseBody, Size: size, Body: append([]byte(nil), body...)})
}
func (r *recorder) RecordDecision(body []byte) {
	r.add(Effect{Kind: RecordDecision, Body: append([]byte(nil), body...)})
}
func (r *recorder) CountRequest(outcome Outcome) {
	r.add(Effect{Kind: CountRequest, Name: outcome.String()})
}
func (r *recorder) CountSkipped(dimension string) {
	r.add(Effect{Kind: CountSkipped, Name: dimension})
}
func (r *recorder) CountFailOpen(reason string) { r.add(Effect{Kind: CountFailOpen, Name: reason}) }
func (r *recorder) CountTokens(entry *limit.HoldEntry, movement TokenMovement, tokens int64) {
	r.add(Effect{Kind: CountTokens, Entry: entry, Name: movement.String(), Tokens: tokens})
}
func (r *recorder) CountRefusal(ref *limit.Refusal, limitType string) {
	r.add(Effect{Kind: CountRefusal, Refusal: ref, Value: limitType})
}
func (r *recorder) CountShadowRefusal(limitType, dimension string) {
	r.add(Effect{Kind: CountShadowRefusal, Value: limitType, Name: dimension})
}
func (r *recorder) CountSpendRefusal(ex spend.Exceeded) {
	r.add(Effect{Kind: CountSpendRefusal, Exceeded: ex})
}
func (r *recorder) CountSpendUSD(policy *spend.Policy, cost money.Amount) {
	r.add(Effect{Kind: CountSpendUSD, Policy: policy, Tokens: int64(cost)})
}

// recording is an environment's recorder, as its Effects and its Facts.
func recording(env Env) Env {
	r := &recorder{}
	env.Effects, env.Facts = r, r
	return env
}

// recorded is x's recorder.
func (x *Exchange) recorded() *recorder { return x.fx.(*recorder) }

// Pending is the effects not yet drained, as a copy.
func (x *Exchange) Pending() []Effect { return append([]Effect(nil), x.recorded().q...) }

// Drain takes every pending effect (what a test compares).
func (x *Exchange) Drain() []Effect {
	r := x.recorded()
	out := r.q
	r.q = nil
	return out
}
