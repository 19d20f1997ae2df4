// Package limit is the vocabulary every budget store and the filter share:
// bucket kinds, periods and dimensions (small integer enums; their names
// appear only at the edges: config, wire, metric labels, refusal text), the
// periods of one bucket (Limit), the ops and plan a request must fit, the
// hold it takes, and the outcome of an admission with its Result. It
// sits at the bottom of shared/ so the pure logic above it (bucket math,
// planning, refusals, the wire) depends on no store; package sharedstore
// holds the Store interface and its backends.
//
// This package is compiled into the .wasm: no fmt, no os, no goroutines.
package limit

import (
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// Kind says how a bucket's units behave over a request's life.
type Kind uint8

const (
	// KindRequests buckets count requests; a unit taken at admission is never
	// given back (the request was made, whatever happened next).
	KindRequests Kind = iota + 1
	// KindConcurrency buckets count requests in flight; capacity never refills
	// with time, and the unit is always released when the stream is done.
	KindConcurrency
	// KindTokens buckets hold the request's estimate plus output ceiling; the
	// hold is settled with the reported usage or released.
	KindTokens
)

var kindNames = enumNames[Kind]{"kind", []string{KindRequests: "requests", KindConcurrency: "concurrency", KindTokens: "tokens"}}

// String names the kind for logs and errors; the wire carries the number.
func (k Kind) String() string { return kindNames.name(k) }

// Limit is one period of one bucket, with the parameters in force when the
// plan was made. A hold records them, so a hold taken before a config reload
// settles on these numbers rather than the live ones.
type Limit struct {
	// Budget is the limit's period: minute or day for tokens; second,
	// minute or day for requests; concurrent for concurrency. (The field
	// keeps the wire's name for it, "budget".)
	Budget Period
	// Capacity is the most the bucket holds. Zero is a budget in force with
	// nothing to give (a divided or pushed zero), not "unlimited": an
	// unlimited period is simply absent from the plan.
	Capacity int64
	// RefillPerSec is the continuous refill; zero for concurrency and for a
	// zero-capacity budget.
	RefillPerSec float64
}

// Op is one bucket (one dimension and identity) checked on all its periods
// together: a request must fit every Limit of the Op or it takes from none.
type Op struct {
	// Key is the bucket's store key. It already carries the dimension, the
	// identity (hashed where secret) and a version of the budget parameters,
	// so a parameter change starts fresh buckets. Both periods of one
	// dimension share one Key.
	Key       string
	Kind      Kind
	Dimension Dimension
	Limits    []Limit
	Amount    int64 // tokens for KindTokens, 1 otherwise
	// Private marks the caller's own bucket (the API-key dimension): only a
	// private bucket's level may be reported to the caller.
	Private bool
	// Record, when set, is the key of one value that holds this op's
	// buckets and its partner's: the request-count op and the token op of
	// one dimension and identity carry the same Record, and the
	// replica-local store reads and writes both in one compare-and-swap
	// (the request counts' states first, then the tokens'). Key still names
	// the op's own bucket, the one the fleet store keeps.
	Record string
}

// Plan is everything one request must fit. Requests (request-count and
// concurrency ops) are admitted all or nothing first; then Tokens, all or
// nothing. A token refusal leaves the request-count units consumed (they
// admitted the request before the token check ran) but releases any
// concurrency units and every token reservation.
type Plan struct {
	Requests []Op
	Tokens   []Op
	// Overage is how the hold this plan makes settles an overage its
	// buckets cannot cover; the hold records it, so a reload never changes
	// how an older hold settles.
	Overage Overage
	// Spend is the USD spend part of the admission: checked before any
	// bucket is touched (preflight), and recorded on the hold so the
	// settlement adds the request's cost to the counters of the call's
	// start periods. A zero Spend (no limit applies) is skipped entirely.
	Spend Spend
}

// Spend is the spend limits that apply to one request and the UTC periods
// of the call's start. The periods are fixed at admission: a call that
// starts on one day and ends on the next is counted in the day it started.
type Spend struct {
	Policy     spend.Policy
	Day, Month calendar.Window
	// Start is the call's start (Unix nanoseconds) and Model the
	// client-facing model priced: the fleet ledger records both with the
	// settlement, to price it again at the prices in effect then.
	Start int64
	Model string
	// Fleet asks the fleet store to check the limits and balance it stores
	// for these identities too, even when Policy sets none.
	Fleet bool
	// Reserve is the request's maximum cost (its input estimate and output
	// ceiling, priced), held on every limited counter at admission and
	// refused when it does not fit what is left; the settlement replaces
	// it with the priced usage, a release gives it back. Zero reserves
	// nothing: the check-only rule (spend_limits.reserve false).
	Reserve money.Amount
	// Recall is set on the plan of a request admitted on the replica's own
	// counters while the fleet store could not answer (the fallback): the
	// local store then checks and reserves against what the fleet's last
	// verdicts left for these identities (spend.Remaining), where it has
	// one. Recalled is what it held the reservation on, one bit per slot
	// and bit NumSlots for the balance (set on the hold), so the end of the
	// hold adjusts the same values.
	Recall   bool
	Recalled uint8
}

// Any reports whether the request has a spend part: a limit applies, or
// the fleet store's are to be checked. When it has none, the store neither
// reads nor writes a spend counter.
func (s *Spend) Any() bool { return s.Fleet || s.Policy.Any() }

// Window is the period of the call's start that slot counts in.
func (s *Spend) Window(slot spend.Slot) calendar.Window {
	if slot.Period() == calendar.Day {
		return s.Day
	}
	return s.Month
}

// Overage says what a settlement does with usage beyond the reservation
// that a bucket's level cannot cover.
type Overage uint8

const (
	// OverageDebt charges the whole overage: the level may go below zero,
	// refill repays the debt, and while the level is at or below zero the
	// bucket admits nothing (a zero-token hold included). The default: a
	// request must never be cheaper than what it consumed.
	OverageDebt Overage = iota
	// OverageSkip consumes nothing from a bucket that cannot cover the
	// whole overage (the original rule, kept behind an option).
	OverageSkip
)

// Level is what a caller may learn about its own bucket after admission.
type Level struct {
	Capacity  int64
	Remaining int64 // floor of the level after this request's reservation
	ResetUnix int64 // Unix second at which the bucket is whole again
}

// OpLevel ties a Level to the private bucket and period it describes.
type OpLevel struct {
	Kind      Kind
	Dimension Dimension
	Budget    Period
	Level     Level
}

// Refusal says which bucket refused and how long a caller should wait.
type Refusal struct {
	Kind      Kind
	Dimension Dimension
	Budget    Period
	// RetryAfterSec is size-aware: the time the refused bucket needs to
	// refill this request's own shortfall (its whole cost when the request
	// is larger than the bucket). At least 1.
	RetryAfterSec int64
	// ExceedsCapacity is true when the request is larger than the refusing
	// bucket's capacity: waiting cannot make it fit.
	ExceedsCapacity bool
	// Private is true when the refusing bucket is the caller's own; only then
	// is Level meaningful and may be shown.
	Private bool
	Level   Level
}

// Backend records which store holds a hold, so it is ended there and never on
// the other (a fallback reservation stays local).
type Backend uint8

const (
	BackendLocal Backend = iota + 1
	BackendRemote
)

// HoldEntry is one reserved bucket of a hold, with its recorded parameters.
type HoldEntry struct {
	Key       string
	Kind      Kind // KindTokens or KindConcurrency
	Dimension Dimension
	Limits    []Limit
	Amount    int64
	// At and Of place the entry's states in a record (Key is then the
	// record's, see Op.Record): they are states At to At+len(Limits) of
	// the record's Of. Of 0: the value at Key is the entry's alone.
	At, Of uint8
}

// HoldEntries are the units an admitted plan's hold must give back or
// settle: concurrency units and token reservations. Request-count units are
// never returned. The remote store and sharedstore both derive a hold from
// its plan with this, so the two sides always agree on what a hold owns.
func (p Plan) HoldEntries() []HoldEntry {
	n := 0
	for _, group := range [2][]Op{p.Requests, p.Tokens} {
		for _, op := range group {
			if op.Kind != KindRequests {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]HoldEntry, 0, n)
	for _, group := range [2][]Op{p.Requests, p.Tokens} {
		for _, op := range group {
			if op.Kind == KindRequests {
				continue
			}
			out = append(out, HoldEntry{Key: op.Key, Kind: op.Kind, Dimension: op.Dimension, Limits: op.Limits, Amount: op.Amount})
		}
	}
	return out
}

// Hold is an admitted request's reservation. Every hold ends exactly once:
// Settle (normal end with usage) or Release (everything else).
type Hold struct {
	Backend Backend
	ID      string // the remote store's hold id; empty for local holds
	Entries []HoldEntry
	Overage Overage // the admitted plan's overage rule
	// Spend is the admitted plan's spend part: the policy-bearing counters
	// (every slot with a limit, under its id) of the call's start periods.
	Spend Spend
	// SpendCost is what the request cost, in nano-USD. The filter sets it
	// just before Settle, from the same usage the token settlement charges;
	// Settle adds it at once to every policy-bearing counter of Spend.
	// Release adds nothing: a failed or released request costs nothing.
	SpendCost money.Amount
	// SpendUsage is the usage SpendCost priced, by kind (set with it).
	SpendUsage tokens.Kinds
}

// ErrSpendUnavailable is an admission error (wrapped in Outcome.Err) that
// says the spend part could not be checked: the fleet store failed its
// lookup, or answered without checking spend at all. The filter answers it
// with 503 spend_store_unavailable; it never admits a request under a
// spend limit that nothing checked.
var ErrSpendUnavailable = errs.New("spend limits could not be checked")

// ErrBucketMapFull is an admission error (wrapped in Outcome.Err) that says
// a bucket the request needs could not be made: its map is at max_buckets
// and no bucket in it could give up its place, and the config says to
// refuse (rate_limiting.on_full_bucket_map "refuse") rather than fail open.
// The filter answers it with a 503.
var ErrBucketMapFull = errs.New("bucket map full")

// Reserved is the token amount the hold took per bucket (the same on every
// token entry), zero when the hold has no token entry.
func (h Hold) Reserved() int64 {
	n, _ := h.TokenReservation()
	return n
}

// TokenReservation is Reserved, with ok false when the hold has no token
// entry at all (a zero hold is a reservation of 0).
func (h Hold) TokenReservation() (amount int64, ok bool) {
	for _, e := range h.Entries {
		if e.Kind == KindTokens {
			return e.Amount, true
		}
	}
	return 0, false
}

// Outcome is the answer to Admit.
type Outcome struct {
	Result  Result
	Refusal *Refusal // set when Result is ResultRefused
	// Levels holds the private buckets' levels after this request's
	// reservation (also on a token refusal, for the request-count buckets
	// that admitted it).
	Levels []OpLevel
	Hold   Hold
	// Skipped names limiter families that failed open for this request (a
	// bucket map at its max_buckets ceiling): "token_budget" (minute map),
	// "token_budget_day" (day map), "requests".
	Skipped []string
	// Spend is the usage of each limited slot in the call's periods as
	// preflight read it (before this request's own cost), for the caller's
	// success headers.
	Spend spend.Usage
	// SpendLeft is what the fleet store's verdict left of each limit and
	// of the balance (zero from other stores), for the fallback's memory.
	SpendLeft spend.Remaining
	// SpendRefusal is set when a spend limit refused the request
	// (ResultSpendRefused): nothing was taken from any bucket.
	SpendRefusal *spend.Exceeded
	// Err is set when the store could not answer (unreachable, timed out,
	// bad reply): Result is then ResultFailed.
	Err error
}

// Admitted reports whether the request may go ahead.
func (o Outcome) Admitted() bool { return o.Result == ResultAdmitted }
