package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// EffectKind says what an effect asks of the adapter.
type EffectKind uint8

const (
	// RemoveRequestHeader removes request header Name.
	RemoveRequestHeader EffectKind = iota + 1
	// SetRequestBody replaces the first Size bytes of the request body
	// with Body.
	SetRequestBody
	// LocalReply answers the client here with status Size, Headers and
	// Body.
	LocalReply
	// Admit hands Plan to the store; its answer comes back as Admitted.
	// Retry marks the shadow-mode retry inside an answer, which keeps the
	// first admission's timing (an answer within Admit is synchronous).
	Admit
	// ResumeRequest continues the request paused for an admission that
	// was answered after Admit returned.
	ResumeRequest
	// Settle ends Hold on Tokens actually used.
	Settle
	// Release gives Hold back.
	Release
	// SetResponseHeaders replaces (or adds) each of Headers in the
	// response, in order.
	SetResponseHeaders
	// SetResponseBody replaces the first Size bytes of the response chunk
	// with Body.
	SetResponseBody
	// RecordDecision writes Body, the decision as JSON, as filter state.
	RecordDecision

	// The facts below are for the metrics.

	// CountRequest counts one request under outcome Name.
	CountRequest
	// CountSkipped counts the limiter family Name that failed open.
	CountSkipped
	// CountFailOpen counts a body admitted without a reservation, for
	// reason Name.
	CountFailOpen
	// CountTokens records Tokens moved on Entry under Name (reserved,
	// refunded, charged).
	CountTokens
	// CountRefusal counts Refusal under limit type Value.
	CountRefusal
	// CountShadowRefusal counts a refusal shadow mode let through: limit
	// type Value, dimension Name.
	CountShadowRefusal
	// CountSpendRefusal counts the spend refusal Exceeded (a limit's slot,
	// or the team's balance).
	CountSpendRefusal
	// CountSpendUSD adds Tokens nano-USD under each scope of Policy.
	CountSpendUSD
)

// Effect is one thing the adapter does for the exchange, in order. Which
// fields are set depends on Kind (see each kind). Pointers point into the
// exchange and are valid until its next event.
type Effect struct {
	Kind     EffectKind
	Retry    bool           // Admit
	Exceeded spend.Exceeded // CountSpendRefusal

	// Name is the header RemoveRequestHeader removes; for a fact, Name is its label (the outcome of
	// CountRequest and CountTokens, the dimension of CountSkipped and
	// CountShadowRefusal, the reason of CountFailOpen) and Value the limit
	// type (CountRefusal, CountShadowRefusal).
	Name, Value string
	Body        []byte           // body rewrites, the local reply's body, the decision
	Size        int              // bytes of the body Body replaces; the local reply's status
	Headers     []refusal.Header // the local reply's headers, the response's new headers
	// Tokens is what Settle charges or CountTokens moves; CountSpendUSD's
	// cost in nano-USD.
	Tokens  int64
	Plan    *limit.Plan
	Hold    *limit.Hold
	Entry   *limit.HoldEntry
	Refusal *limit.Refusal
	Policy  *spend.Policy
}

// effects is the queue of effects not yet carried out. Events append; the
// adapter takes them in order with Next, also while an effect it carries
// out (an admission answered at once) feeds the exchange a new event.
type effects struct {
	q    []Effect
	head int
}

// emit queues an effect of kind k and returns it for its fields to be
// set: filled in place, no effect is built and then copied. Not inlined:
// the append of a whole Effect is code worth having once in the module.
//
//go:noinline
func (x *Exchange) emit(k EffectKind) *Effect {
	f := &x.fx
	f.q = append(f.q, Effect{Kind: k})
	return &f.q[len(f.q)-1]
}

// reset empties the queue for a new exchange. Entries are zeroed as the
// queue drains (see Next), so the buffer keeps no body of the last one.
func (f *effects) reset() effects {
	clear(f.q)
	return effects{q: f.q[:0]}
}

// Next takes the next effect to carry out; nil when none is left. The
// effect is valid until the exchange's next event: read it before feeding
// the exchange again (an admission answered at once does).
func (x *Exchange) Next() *Effect {
	f := &x.fx
	if f.head >= len(f.q) {
		if len(f.q) > 0 {
			// Drained: forget what the effects pointed to (bodies, replies).
			clear(f.q)
			f.q, f.head = f.q[:0], 0
		}
		return nil
	}
	f.head++
	return &f.q[f.head-1]
}

// Pending is the effects not yet taken, as a copy: for tests and logs.
func (x *Exchange) Pending() []Effect {
	return append([]Effect(nil), x.fx.q[x.fx.head:]...)
}

// Drain takes every pending effect (what a test compares).
func (x *Exchange) Drain() []Effect {
	out := x.Pending()
	clear(x.fx.q)
	x.fx.q, x.fx.head = x.fx.q[:0], 0
	return out
}
