// Package exchange is one HTTP exchange through the filter as a state
// machine without a host: it takes the events of one request and its
// response (request headers and body as read-only views, the store's
// admission outcome, response headers and body chunks, the end or a reset)
// and answers with effects (header edits, a body rewrite, a local reply, a
// plan to admit, a hold to settle or release, facts for the metrics and the
// access log), which the filter's adapter carries out against the host and
// the store. Every admission, reconciliation and refusal rule lives here,
// so each is a native test of events to effects.
//
// Where the exchange stands is one Phase (the request side), one answer
// (how the response is read) and one holdState (whether a hold is open);
// no rule combines flags.
//
// Compiled into the .wasm: no fmt, no os, no goroutines.
package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/ipaddr"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/sse"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// Env is what an exchange reads from the plugin instance that runs it: the
// config it is admitted under, the key-hash cache, and the clock.
type Env struct {
	Config *config.Runtime // nil: no config applied yet, nothing is metered
	// Effects carries out what the exchange decides and Facts counts it;
	// both required.
	Effects Effects
	Facts   Facts
	Keys    *identity.KeyCache
	// Now is the host's clock, in nanoseconds since the epoch.
	Now func() int64
	// AnyClamp says some model clamps its output ceiling, so a body on any
	// route may be rewritten.
	AnyClamp bool
	// Fleet says admissions go to a fleet store: one answered on the
	// replica's own buckets is a fallback, and the log says so.
	Fleet bool
}

// Phase is where the request side of an exchange stands.
type Phase uint8

const (
	// PhaseStart: no request headers yet.
	PhaseStart Phase = iota
	// PhasePassThrough: not metered (no config, or not a metered route).
	PhasePassThrough
	// PhaseExempt: a metered route, but the client or key is exempt.
	PhaseExempt
	// PhaseBody: metered, reading the request body.
	PhaseBody
	// PhaseAdmitting: the plan is with the store; the request waits.
	PhaseAdmitting
	// PhaseForwarded: admitted; the request went upstream.
	PhaseForwarded
	// PhaseReplied: answered here (refused, invalid, unauthorized,
	// unavailable); nothing went upstream.
	PhaseReplied
	// PhaseDone: the host ended the stream; a late admission is released.
	PhaseDone
)

// answer is how the response is read for settlement.
type answer uint8

const (
	answerNone    answer = iota // no response headers yet
	answerFree                  // an error status or a cache hit: costs nothing
	answerEncoded               // compressed although asked not to be: charged its hold and its bytes
	answerStream                // an event stream, read by the usage reader
	answerBody                  // a JSON body, read for its usage as it passes
)

// holdState says whether the exchange holds budget.
type holdState uint8

const (
	holdNone  holdState = iota // no hold taken (yet)
	holdOpen                   // taken and not yet ended
	holdEnded                  // settled, released or cut
)

// Action is what a request callback answers the host.
type Action uint8

const (
	Continue Action = iota
	Pause
	// AfterAdmission: the answer depends on the admission the effects
	// start; ask Admission once they ran.
	AfterAdmission
)

// Request is the read-only view of the request an exchange reads.
type Request interface {
	Header(name string) (string, bool)
	// Headers is every header entry, in order, repeats included. The list
	// is valid only until the headers callback returns (the binding reuses
	// its array); the strings in it stay valid for the whole exchange.
	Headers() [][2]string
	// Property is a host property (metadata, filter state, the peer).
	Property(path ...string) ([]byte, bool)
	// Body is the first size bytes of the buffered request body, valid only
	// until the body callback returns (it may be the host's scratch buffer,
	// which admission's store reads overwrite): the exchange copies what it
	// keeps (the model's name) and hands a rewrite to the host at once.
	Body(size int) ([]byte, bool)
}

// Response is the read-only view of the response an exchange reads.
type Response interface {
	// Header is the first value of the named header. It is valid only until
	// the next call on the view (it may be the host's scratch buffer): the
	// exchange decides on each header before it reads another, and keeps
	// none.
	Header(name string) (string, bool)
	// Chunk is the body chunk the callback announced. scratch allows the
	// host's scratch buffer: the exchange keeps nothing of it past the
	// callback.
	Chunk(size int, scratch bool) ([]byte, bool)
}

// unavailableRetryAfter is the Retry-After of a fail-closed 503: long
// enough for a store to come back, short enough not to strand clients.
const unavailableRetryAfter = 5

// Exchange is one HTTP request and its response. Its hold (if any) ends
// exactly once: settled at the response's normal end with usage, released
// or charged as the rules say on everything else, at the latest when the
// host says the stream is done.
type Exchange struct {
	env   Env
	rt    *config.Runtime // the config this request was admitted under
	phase Phase
	api   usage.API

	who  budget.Identity
	addr ipaddr.Addr // the peer, as the host reports it
	req  estimate.Request
	// bodyLength is the request's content-length as sent ("" for none),
	// the byte count of a body too large to buffer.
	bodyLength string
	// injected: the filter added include_usage; the client did not ask.
	injected bool

	plan    limit.Plan    // what admit asked for, kept for a shadow-mode retry
	refusal limit.Refusal // the refusal a reply answers
	// spendRefusal is the spend refusal a reply answers (log.spendRefused).
	spendRefusal spend.Exceeded
	// planned is the token amount admission asked to hold; with no token
	// bucket in the plan it is what a charge "of the hold" prices.
	planned int64
	hold    limit.Hold
	held    holdState
	levels  []limit.OpLevel
	// price prices this request's usage when a spend limit applies;
	// spendUsed is the spend preflight read, for the success headers.
	price     pricing.Entry
	spendUsed spend.Usage

	answer answer
	// split frames a streamed answer (nil otherwise), once, for the usage
	// reader and for dropping the usage chunk the filter asked for.
	split  *sse.Splitter
	reader *usage.Stream
	// body is a non-streamed answer that came whole in one chunk, read
	// whole (usage.FromJSON); one in more chunks is read as it passes by
	// scan (usage.Body), lent by kept. answerBytes counts the answer's
	// bytes, what an answer whose usage cannot be read is estimated from.
	body        []byte
	scan        *usage.Body
	answerBytes int64

	log decision
	// kept is what the exchange keeps for the next one, by pointer, so
	// that Reset zeroes the rest without copying it out and back (in the
	// VM each copy is a memory.copy of the whole struct).
	kept  *kept
	fx    Effects // env.Effects
	facts Facts   // env.Facts
}

// kept is an exchange's buffers, lent again to the next exchange.
type kept struct {
	out []byte // a forwarded chunk that differs from the one read
	// logBuf is the decision's JSON: the adapter copies it into the host.
	logBuf []byte
	// planBuf is the plan's storage: an exchange is Reset only once
	// nothing holds its plan (filter/core recycles a stream only when its
	// store keeps no reference).
	planBuf budget.Buffers
	// parser keeps the estimator's decoding buffers (nothing of the body
	// is kept in them past the body callback).
	parser estimate.Parser
	// scan reads a non-streamed answer that comes in more than one chunk
	// (made on first use: most answers come whole).
	scan *usage.Body
}

// Start readies x for a new exchange under env: Reset, then Begin.
func (x *Exchange) Start(env Env) {
	x.Reset()
	x.Begin(env)
}

// Reset forgets everything of the last exchange, keeping only buffers, so
// a parked exchange holds no body or hold alive.
func (x *Exchange) Reset() {
	k := x.kept
	*x = Exchange{}
	x.kept = k
}

// Begin sets the environment of an exchange that is new or Reset.
func (x *Exchange) Begin(env Env) { x.env, x.fx, x.facts = env, env.Effects, env.Facts }

// buffers is x.kept, made on first use.
func (x *Exchange) buffers() *kept {
	if x.kept == nil {
		x.kept = &kept{}
	}
	return x.kept
}

// Phase is where the request side stands.
func (x *Exchange) Phase() Phase { return x.phase }

// metered says the exchange is one the filter meters and records: its
// route is metered and no exemption applied.
func (x *Exchange) metered() bool {
	switch x.phase {
	case PhaseBody, PhaseAdmitting, PhaseForwarded, PhaseReplied:
		return true
	}
	return false
}

// Admission is the answer to the request callback that started an
// admission, once its effects ran: continue when the request was admitted,
// else wait (for the store's answer, or forever after a local reply).
func (x *Exchange) Admission() Action {
	if x.phase == PhaseForwarded {
		return Continue
	}
	return Pause
}

// Identity is who the request is for, as admission resolved it.
func (x *Exchange) Identity() budget.Identity { return x.who }

// Log is the end of the exchange's log phase (the host's on_log, before
// on_done): a hold still open belongs to an answer that never reached its
// normal end, and ending it now lets how it ended reach the access log.
func (x *Exchange) Log() {
	if x.held == holdOpen {
		x.cut()
	}
	if x.metered() {
		x.record()
	}
}

// Done is the host's word that the stream is over. A hold still open here
// belongs to a stream that never reached its normal end; an admission
// answered from now on is released.
func (x *Exchange) Done() {
	if x.held == holdOpen {
		x.cut()
	}
	x.phase = PhaseDone
}

// Deleted is the host's word that the context is gone: an admission
// answered from now on is released.
func (x *Exchange) Deleted() { x.phase = PhaseDone }

func (x *Exchange) failOpen(reason string) {
	x.facts.CountFailOpen(reason)
	x.log.failOpen = reason
}
