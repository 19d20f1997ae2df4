package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// finish ends the hold at the response's end: settle with the backend's
// usage, release on failure, cache hit, or a whole answer that reported no
// usage; an answer whose usage cannot be read is charged its hold plus an
// estimate of its bytes (settleHeld).
func (x *Exchange) finish() {
	if x.held != holdOpen {
		return
	}
	switch x.answer {
	case answerFree:
		x.release()
	case answerEncoded:
		// The backend compressed its answer although the filter asked it not
		// to: the usage cannot be read, and releasing would make the request
		// free. It is charged what it held and its bytes.
		x.settleHeld()
	case answerStream:
		if !x.reader.Completed() {
			x.cut()
			return
		}
		u, ok := x.reader.Usage()
		switch {
		case ok:
			x.settle(u.Total(), u.Kinds())
		case x.lostEvents():
			x.settleHeld() // the usage may have been in what was lost
		default:
			total := x.req.Input + x.reader.DeltaTokens()
			x.settle(total, x.kindsOf(total))
		}
	default:
		// answerUsage spelled out: in the VM a Usage returned through one
		// more frame is one more copy, on every answer.
		var u usage.Usage
		var ok bool
		if x.scan != nil {
			u, ok = x.scan.Usage()
		} else {
			u, ok = usage.FromJSON(x.api, x.body)
		}
		if ok {
			x.settle(u.Total(), u.Kinds())
			return
		}
		if x.answerBytes > 0 && x.unreadableAnswer() {
			// Not JSON, or a usage object too large to keep: the usage
			// may be there, unread. Never free, nor the hold alone.
			x.settleHeld()
			return
		}
		x.release() // a whole JSON answer that reported no usage, or no answer
	}
}

// answerUsage is a non-streamed answer's usage, read whole or by the
// scan.
func (x *Exchange) answerUsage() (usage.Usage, bool) {
	if x.scan != nil {
		return x.scan.Usage()
	}
	return usage.FromJSON(x.api, x.body)
}

// unreadableAnswer says a non-streamed answer without a readable usage may
// carry one that could not be read: it is not one whole valid JSON value,
// or its usage object is larger than the scan keeps.
func (x *Exchange) unreadableAnswer() bool {
	if x.scan != nil {
		return x.scan.Unreadable()
	}
	return !jsonx.Valid(x.body)
}

// lostEvents says the usage reader missed an event too large to read.
func (x *Exchange) lostEvents() bool { return x.answer == answerStream && x.split.Lost() }

// cut ends a hold whose answer stopped before its normal end: the client
// or the upstream reset, or the stream ended without its final event. By
// default (on_cut_stream "charge_seen") it is charged what it delivered, so
// reading an answer and resetting before its last event buys nothing;
// "release" gives everything back.
func (x *Exchange) cut() {
	if x.lostEvents() {
		// An event too large to read was dropped: it may have been the one
		// that ends the stream. Charged what it held rather than released.
		x.settleHeld()
		return
	}
	if x.rt.ReleaseCutStreams || x.answer == answerFree {
		x.release() // an error answer or a cache hit costs nothing, cut or not
	} else {
		x.settle(x.delivered())
	}
	x.log.end = endCut
}

// delivered is what a cut answer consumed, as far as the filter saw it:
//   - a stream: the input the backend reported (else the estimate) plus the
//     larger of the output it reported and the deltas counted, since a usage
//     block seen mid-stream (Anthropic's message_start) may predate most of
//     the output;
//   - a non-streamed answer that had begun: its usage if the body was whole,
//     else its hold plus an estimate of the bytes it delivered (the backend
//     generates before it sends, and the usage cannot be read);
//   - no answer yet: the input estimate, which the backend has read.
//
// The kinds are the same figure split for pricing: the backend's own split
// where it reported usage (the output raised to the deltas counted), else
// input up to the estimate and output the rest.
func (x *Exchange) delivered() (int64, tokens.Kinds) {
	switch x.answer {
	case answerEncoded:
		t := x.unreadTokens() // unreadable, as at a normal end
		return t, x.kindsOf(t)
	case answerStream:
		input, output := x.req.Input, x.reader.DeltaTokens()
		if u, ok := x.reader.Usage(); ok {
			input, output = u.Total()-u.Output, max(u.Output, output)
			u.Output = output
			return input + output, u.Kinds()
		}
		return input + output, x.kindsOf(input + output)
	case answerBody:
		if u, ok := x.answerUsage(); ok {
			return u.Total(), u.Kinds()
		}
		t := x.unreadTokens()
		return t, x.kindsOf(t)
	default:
		return x.req.Input, x.kindsOf(x.req.Input)
	}
}

// heldTokens is what "charged its hold" charges: the hold's token
// reservation, or the amount admission planned when no token bucket took
// one (a request under spend limits only is priced on the same figure).
func (x *Exchange) heldTokens() int64 {
	if n, ok := x.hold.TokenReservation(); ok {
		return n
	}
	return x.planned
}

// unreadTokens is what an answer whose usage cannot be read is charged:
// its hold plus an estimate of the answer's bytes (estimate.Bytes), so an
// answer larger than its hold is never charged the hold alone.
func (x *Exchange) unreadTokens() int64 {
	return x.heldTokens() + estimate.Bytes(x.answerBytes)
}

// settleHeld charges an answer whose usage cannot be read: unreadTokens.
func (x *Exchange) settleHeld() {
	t := x.unreadTokens()
	x.settle(t, x.kindsOf(t))
}

// settle ends the hold on actual tokens; k is the same usage by kind, which
// prices the request when a spend limit applies.
func (x *Exchange) settle(actual int64, k tokens.Kinds) {
	x.chargeSpend(k)
	x.held = holdEnded
	x.body = nil
	x.log.end, x.log.usage = endSettled, actual
	reserved := x.hold.Reserved()
	for i := range x.hold.Entries {
		e := &x.hold.Entries[i]
		if actual < reserved {
			x.facts.CountTokens(e, TokensRefunded, reserved-actual)
		} else {
			x.facts.CountTokens(e, TokensCharged, actual-reserved)
		}
	}
	x.fx.Settle(&x.hold, actual)
}

// release gives the whole hold back.
func (x *Exchange) release() {
	x.held = holdEnded
	x.body = nil
	x.log.end, x.log.usage = endReleased, 0
	for i := range x.hold.Entries {
		e := &x.hold.Entries[i]
		x.facts.CountTokens(e, TokensRefunded, e.Amount)
	}
	x.fx.Release(&x.hold)
}

// chargeSpend prices what the settlement charges and puts the cost on the
// hold for the store's postflight.
func (x *Exchange) chargeSpend(k tokens.Kinds) {
	if !x.hold.Spend.Any() {
		return
	}
	cost := pricing.Cost(k, x.price)
	x.hold.SpendCost, x.hold.SpendUsage = cost, k
	x.log.spend, x.log.spendCharged = cost, true
	x.facts.CountSpendUSD(&x.hold.Spend.Policy, cost)
}

// kindsOf splits a token figure the filter charges without the backend's
// usage (a hold, an estimate plus counted deltas) into input, at most the
// request's input estimate, and output, the rest.
func (x *Exchange) kindsOf(total int64) tokens.Kinds {
	in := min(max(x.req.Input, 0), max(total, 0))
	return tokens.Kinds{Input: in, Output: max(total, 0) - in}
}
