package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
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
	// LocalReply answers the client here with Status, Headers and Body.
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
	// SetResponseHeader replaces (or adds) response header Name with Value.
	SetResponseHeader
	// SetResponseBody replaces the first Size bytes of the response chunk
	// with Body.
	SetResponseBody
	// RecordDecision writes Body, the decision as JSON, as filter state.
	RecordDecision

	// The facts below are for the metrics.

	// CountRequest counts one request under Outcome.
	CountRequest
	// CountSkipped counts a dimension skipped for an identity it lacks.
	CountSkipped
	// CountFailOpen counts a body admitted without a reservation.
	CountFailOpen
	// CountTokens records Tokens moved on Entry under Outcome (reserved,
	// refunded, charged).
	CountTokens
	// CountRefusal counts Refusal under LimitType.
	CountRefusal
	// CountShadowRefusal counts a refusal shadow mode let through.
	CountShadowRefusal
	// CountSpendRefusal counts a spend refusal of Slot.
	CountSpendRefusal
	// CountSpendUSD adds Cost under each scope of Policy.
	CountSpendUSD
)

// Effect is one thing the adapter does for the exchange, in order. Which
// fields are set depends on Kind (see each kind). Pointers point into the
// exchange and are valid until its next event.
type Effect struct {
	Kind EffectKind

	Name, Value string           // header edits
	Size        int              // bytes of the body Body replaces
	Body        []byte           // body rewrites, the local reply's body, the decision
	Status      int              // the local reply's status
	Headers     []refusal.Header // the local reply's headers
	Plan        *limit.Plan
	Retry       bool
	Hold        *limit.Hold
	Tokens      int64

	Outcome   string // CountRequest, CountTokens
	Reason    string // CountFailOpen
	Dimension string // CountSkipped, CountShadowRefusal
	LimitType string // CountRefusal, CountShadowRefusal
	Entry     *limit.HoldEntry
	Refusal   *limit.Refusal
	Slot      spend.Slot
	Policy    *spend.Policy
	Cost      money.Amount
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

// reset empties the queue for a new exchange; the entries are zeroed so
// the buffer keeps no body or hold of the last one alive.
func (f *effects) reset() effects {
	clear(f.q[:cap(f.q)])
	return effects{q: f.q[:0]}
}

// Next takes the next effect to carry out; false when none is left.
func (x *Exchange) Next() (Effect, bool) {
	f := &x.fx
	if f.head >= len(f.q) {
		return Effect{}, false
	}
	e := f.q[f.head]
	f.head++
	if f.head == len(f.q) {
		f.q, f.head = f.q[:0], 0
	}
	return e, true
}

// Pending is the effects not yet taken, as a copy: for tests and logs.
func (x *Exchange) Pending() []Effect {
	return append([]Effect(nil), x.fx.q[x.fx.head:]...)
}

// Drain takes every pending effect (what a test compares).
func (x *Exchange) Drain() []Effect {
	out := x.Pending()
	x.fx.q, x.fx.head = x.fx.q[:0], 0
	return out
}
