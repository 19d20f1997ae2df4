package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// holdEnd says how a request's hold ended.
type holdEnd uint8

const (
	endOpen holdEnd = iota // no hold, or not ended yet
	endSettled
	endReleased
	endCut // the answer stopped before its normal end; charged or released per on_cut_stream
)

var holdEndNames = [...]string{endOpen: "", endSettled: "settled", endReleased: "released", endCut: "cut"}

// decision is what the filter decided for one request, written once as
// filter state when the stream is logged: the outcome, the refusing limit,
// the would-be refusals of shadow mode, the hold, what it settled on and how
// it ended. The key appears as its config id or its hash, never raw.
type decision struct {
	outcome   Outcome
	code      string // the error code of an invalid or unauthorized request
	limitType string // the refusing limit
	dimension string
	failOpen  string // why the body went unreserved: not_json, body_too_large, ...
	shadow    []shadowRefusal
	skipped   []string
	hold      int64
	usage     int64 // tokens charged at the end
	end       holdEnd
	fellBack  bool // admitted on the replica-local buckets during a store outage
	// spend is what the request cost under its spend limits, in nano-USD
	// (written as spend_nano_usd and as decimal spend_usd), when it was
	// priced at settlement; spendSlot names the limit of a spend refusal.
	spend        money.Amount
	spendCharged bool
	spendSlot    spend.Slot
	spendRefused bool
	// priceEntry names the pricing entry the request was priced at, and
	// modelEntry the models/per_model entry that limited it: the entry a
	// spelling resolved to (package modelname), or "default" for a price.
	priceEntry string
	modelEntry string
	keyID      string
	keyHash    string
	recorded   bool
}

// shadowRefusal is one refusal a shadow-mode dimension counted instead of
// enforcing.
type shadowRefusal struct{ limitType, dimension string }

// appendJSON renders d as one JSON object (the access log's field).
//
// Every value but the key's config id is a name the filter itself makes:
// outcomes, error codes, limit types, dimensions, fail-open reasons, hold
// ends, skipped families (letters and underscores), and the key's hash (hex
// digits). They are plain JSON text, so they are written between quotes as
// they are; the escaper's scan and growth check per value were half of this
// function's cost in the VM. The id comes from the config and is escaped.
// FuzzAHoldEndsExactlyOnce checks that every record is a valid JSON object.
func (d *decision) appendJSON(b []byte) []byte {
	b = appendName(append(b, `{"outcome":"`...), d.outcome.String())
	b = appendMember(b, `,"code":"`, d.code)
	b = appendMember(b, `,"limit_type":"`, d.limitType)
	b = appendMember(b, `,"dimension":"`, d.dimension)
	b = appendMember(b, `,"failed_open":"`, d.failOpen)
	if len(d.shadow) > 0 {
		b = append(b, `,"shadow_refusals":[`...)
		for i, s := range d.shadow {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendName(append(b, `{"limit_type":"`...), s.limitType)
			b = appendName(append(b, `,"dimension":"`...), s.dimension)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(d.skipped) > 0 {
		b = append(b, `,"skipped":[`...)
		for i, s := range d.skipped {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendName(append(b, '"'), s)
		}
		b = append(b, ']')
	}
	if d.fellBack {
		b = append(b, `,"fallback":true`...)
	}
	if d.outcome == OutcomeAdmitted {
		b = append(b, `,"hold":`...)
		b = jsonx.AppendInt(b, d.hold)
	}
	if d.end != endOpen {
		b = appendName(append(b, `,"end":"`...), holdEndNames[d.end])
		b = append(b, `,"usage":`...)
		b = jsonx.AppendInt(b, d.usage)
	}
	if d.spendRefused {
		b = appendMember(b, `,"spend_scope":"`, d.spendSlot.Scope().String())
		b = appendMember(b, `,"spend_period":"`, d.spendSlot.Period().String())
	}
	if d.spendCharged {
		b = append(b, `,"spend_nano_usd":`...)
		b = jsonx.AppendInt(b, int64(d.spend))
		b = append(b, `,"spend_usd":"`...)
		b = money.AppendUSD(b, int64(d.spend))
		b = append(b, '"')
	}
	if d.modelEntry != "" {
		b = jsonx.AppendString(append(b, `,"model_entry":`...), d.modelEntry)
	}
	if d.priceEntry != "" {
		b = jsonx.AppendString(append(b, `,"price_entry":`...), d.priceEntry)
	}
	if d.keyID != "" {
		b = jsonx.AppendString(append(b, `,"key_id":`...), d.keyID)
	} else {
		b = appendMember(b, `,"key_hash":"`, d.keyHash)
	}
	return append(b, '}')
}

// appendMember writes member, the spelled-out prefix ,"name":" (a constant
// needs no escaping), and the name v, when v is set. It is a plain function
// the compiler puts in line: in the VM a closure call per member and the
// escaper per member name were most of appendJSON's cost.
func appendMember(b []byte, member, v string) []byte {
	if v == "" {
		return b
	}
	return appendName(append(b, member...), v)
}

// appendName writes v, a name the filter makes (plain JSON text), and the
// quote that closes it.
func appendName(b []byte, v string) []byte {
	return append(append(b, v...), '"')
}

// record writes the decision as filter state, once per exchange.
func (x *Exchange) record() {
	d := &x.log
	if d.recorded || d.outcome == OutcomeNone {
		return
	}
	d.recorded = true
	d.keyID, d.keyHash = x.who.Key.ID, x.who.APIKeyHash
	k := x.buffers()
	k.logBuf = d.appendJSON(k.logBuf[:0])
	x.fx.RecordDecision(k.logBuf)
}
