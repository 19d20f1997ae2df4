package exchange

import "github.com/tokenbudget/tokenbudget/shared/refusal"

// Outcome is what a metered request came to: the label of
// rate_limit_requests_total and the access log's "outcome". The zero value
// is a request not concluded yet (nothing is recorded for it).
type Outcome uint8

const (
	OutcomeNone Outcome = iota
	// OutcomeAdmitted: the request went upstream.
	OutcomeAdmitted
	// OutcomeExempt: the client or key is exempt; the request went upstream
	// unmetered.
	OutcomeExempt
	// OutcomeRefused: a budget, rate or spend limit refused it (429).
	OutcomeRefused
	// OutcomeInvalid: the rules refuse it whatever the budgets (400).
	OutcomeInvalid
	// OutcomeUnauthorized: its key is unknown or missing where one is
	// required (401).
	OutcomeUnauthorized
	// OutcomeUnavailable: nothing could check its limits, so it failed
	// closed (503).
	OutcomeUnavailable
)

var outcomeNames = [...]string{OutcomeNone: "", OutcomeAdmitted: "admitted", OutcomeExempt: "exempt",
	OutcomeRefused: "refused", OutcomeInvalid: "invalid", OutcomeUnauthorized: "unauthorized",
	OutcomeUnavailable: "unavailable"}

// String is the outcome's metric label and access-log value.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return ""
}

// conclude ends the request side under o, the one place that does: the
// request is counted (a refusal also under the limit that refused, which
// x.refusal or x.spendRefusal holds) and logged, then it goes upstream
// (admitted, exempt) or is answered here with status, body and headers.
func (x *Exchange) conclude(o Outcome, status int, body []byte, headers []refusal.Header) {
	x.facts.CountRequest(o)
	x.log.outcome = o
	switch o {
	case OutcomeAdmitted:
		x.phase = PhaseForwarded
		return
	case OutcomeExempt:
		x.phase = PhaseExempt
		return
	case OutcomeRefused:
		if x.log.spendRefused {
			x.facts.CountSpendRefusal(x.spendRefusal)
		} else {
			x.facts.CountRefusal(&x.refusal, x.log.limitType)
		}
	}
	x.phase = PhaseReplied
	x.fx.LocalReply(status, body, headers)
}
