package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// Effects carries out what an exchange decides, as it decides it: the
// filter's adapter makes host, store and metric calls; the exchange's tests
// record the calls. Nothing is queued (in the VM each queued effect cost a
// copy, a take and a dispatch: ≈ 22 k instructions a request): an effect is
// done before the exchange moves on. No effect calls back into the
// exchange: a store that answers an Admit at once returns its answer, and
// the exchange acts on it once Admit has returned. Pointers point into the
// exchange and are valid until its next event.
type Effects interface {
	// RemoveRequestHeader removes request header name.
	RemoveRequestHeader(name string)
	// SetRequestBody replaces the first size bytes of the request body
	// with body.
	SetRequestBody(size int, body []byte)
	// LocalReply answers the client here with status, body and headers.
	LocalReply(status int, body []byte, headers []refusal.Header)
	// Admit hands plan to the store. A store that answers within the call
	// returns its answer, valid until the next Admit or event; nil means
	// the answer comes later, as the event Exchange.Admitted. retry marks
	// the shadow-mode retry within an answer: the plan asked before, less
	// the shadowed dimension.
	Admit(plan *limit.Plan, retry bool) *limit.Outcome
	// ResumeRequest continues the request paused for an admission that
	// was answered after Admit returned.
	ResumeRequest()
	// Settle ends hold on tokens actually used.
	Settle(hold *limit.Hold, tokens int64)
	// Release gives hold back.
	Release(hold *limit.Hold)
	// SetResponseHeaders replaces (or adds) each of headers in the
	// response, in order.
	SetResponseHeaders(headers []refusal.Header)
	// SetResponseBody replaces the first size bytes of the response chunk
	// with body.
	SetResponseBody(size int, body []byte)
	// RecordDecision writes body, the decision as JSON, as filter state.
	RecordDecision(body []byte)
}

// Facts are what an exchange tells the metrics, which the adapter's metric
// set takes directly.
type Facts interface {
	// CountRequest counts one request under outcome.
	CountRequest(outcome Outcome)
	// CountSkipped counts the limiter family dimension that failed open.
	CountSkipped(dimension string)
	// CountFailOpen counts a body admitted without a reservation.
	CountFailOpen(reason string)
	// CountTokens records tokens moved on entry (TokensReserved,
	// TokensRefunded, TokensCharged).
	CountTokens(entry *limit.HoldEntry, movement TokenMovement, tokens int64)
	// CountRefusal counts r under limitType.
	CountRefusal(r *limit.Refusal, limitType string)
	// CountShadowRefusal counts a refusal shadow mode let through.
	CountShadowRefusal(limitType, dimension string)
	// CountSpendRefusal counts the spend refusal ex (a limit's slot, or
	// the team's balance).
	CountSpendRefusal(ex spend.Exceeded)
	// CountSpendUSD adds cost under each scope of policy.
	CountSpendUSD(policy *spend.Policy, cost money.Amount)
}
