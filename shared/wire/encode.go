package wire

import (
	"math"
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// AppendAdmit appends the JSON body of POST /v1/admit for a plan, leaving
// the hold id to the server (see AppendAdmitHold).
func AppendAdmit(dst []byte, p limit.Plan) []byte { return AppendAdmitHold(dst, p, "") }

// AppendAdmitHold appends the JSON body of POST /v1/admit for a plan whose
// hold the caller names (empty: the server names it). It writes straight
// from the plan, without the reflection and intermediate copies of
// encoding/json, because the filter encodes one on every request; the tests
// hold the bytes to what encoding/json makes of the same request.
func AppendAdmitHold(dst []byte, p limit.Plan, holdID string) []byte {
	dst = append(dst, '{')
	comma := false
	if holdID != "" {
		dst = append(dst, `"hold_id":`...)
		dst = jsonx.AppendString(dst, holdID)
		comma = true
	}
	dst = appendOps(dst, "requests", p.Requests, comma)
	comma = comma || len(p.Requests) > 0
	dst = appendOps(dst, "tokens", p.Tokens, comma)
	comma = comma || len(p.Tokens) > 0
	if p.Overage == limit.OverageSkip {
		if comma {
			dst = append(dst, ',')
		}
		dst = append(dst, `"overage":"skip"`...)
		comma = true
	}
	if a := FromSpend(p.Spend); a != nil {
		if comma {
			dst = append(dst, ',')
		}
		dst = append(dst, `"spend":`...)
		dst = appendSpendAdmit(dst, a)
	}
	return append(dst, '}')
}

func appendOps(dst []byte, name string, ops []limit.Op, comma bool) []byte {
	if len(ops) == 0 {
		return dst
	}
	if comma {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	dst = append(dst, `":[`...)
	for i, o := range ops {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"key":`...)
		dst = jsonx.AppendString(dst, o.Key)
		dst = append(dst, `,"kind":`...)
		dst = strconv.AppendUint(dst, uint64(o.Kind), 10)
		dst = append(dst, `,"dimension":`...)
		dst = jsonx.AppendString(dst, o.Dimension.String())
		dst = append(dst, `,"limits":[`...)
		for j, l := range o.Limits {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"budget":`...)
			dst = jsonx.AppendString(dst, l.Budget.String())
			dst = append(dst, `,"capacity":`...)
			dst = jsonx.AppendInt(dst, l.Capacity)
			dst = append(dst, `,"refill_per_sec":`...)
			dst = appendFloat(dst, l.RefillPerSec)
			dst = append(dst, '}')
		}
		dst = append(dst, `],"amount":`...)
		dst = jsonx.AppendInt(dst, o.Amount)
		if o.Private {
			dst = append(dst, `,"private":true`...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendFloat writes a JSON number. NaN and infinities have no JSON form; they
// are written as a string the server refuses to decode, so a broken plan is a
// store error rather than a silently zero refill.
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, `"not-a-number"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// AppendSettle appends the JSON body of POST /v1/settle.
func AppendSettle(dst []byte, hold string, actual int64, keys []string) []byte {
	return AppendSettleRecord(dst, hold, actual, keys, nil)
}

// AppendSettleRecord appends the JSON body of POST /v1/settle with the
// hold's inference record (nil: none).
func AppendSettleRecord(dst []byte, hold string, actual int64, keys []string, rec *SpendRecord) []byte {
	dst = append(dst, `{"hold":`...)
	dst = jsonx.AppendString(dst, hold)
	dst = append(dst, `,"actual":`...)
	dst = jsonx.AppendInt(dst, actual)
	dst = appendKeys(dst, keys)
	if rec != nil {
		dst = append(dst, `,"spend":`...)
		dst = appendSpendRecord(dst, rec)
	}
	return append(dst, '}')
}

// AppendRelease appends the JSON body of POST /v1/release.
func AppendRelease(dst []byte, hold string, keys []string) []byte {
	dst = append(dst, `{"hold":`...)
	dst = jsonx.AppendString(dst, hold)
	dst = appendKeys(dst, keys)
	return append(dst, '}')
}

// AppendReleaseSpend is AppendRelease for a hold that reserved spend
// under team (ReleaseRequest.Spend).
func AppendReleaseSpend(dst []byte, hold string, keys []string, team string) []byte {
	dst = AppendRelease(dst, hold, keys)
	dst = append(dst[:len(dst)-1], `,"spend":true`...)
	if team != "" {
		dst = append(dst, `,"team":`...)
		dst = jsonx.AppendString(dst, team)
	}
	return append(dst, '}')
}

func appendKeys(dst []byte, keys []string) []byte {
	if len(keys) == 0 {
		return dst
	}
	return jsonx.AppendStrings(append(dst, `,"keys":`...), keys)
}

// AppendAdmitResponse appends the JSON answer to POST /v1/admit: the
// members, order and omissions json.Marshal writes for r (strings escaped by
// jsonx, which decode to the same values), written without reflection
// because the service answers every admission.
func AppendAdmitResponse(dst []byte, r AdmitResponse) []byte {
	dst = append(dst, `{"admitted":`...)
	dst = strconv.AppendBool(dst, r.Admitted)
	if r.Aborted {
		dst = append(dst, `,"aborted":true`...)
	}
	if f := r.Refusal; f != nil {
		dst = append(dst, `,"refusal":{"kind":`...)
		dst = strconv.AppendUint(dst, uint64(f.Kind), 10)
		dst = append(dst, `,"dimension":`...)
		dst = jsonx.AppendString(dst, f.Dimension.String())
		dst = append(dst, `,"budget":`...)
		dst = jsonx.AppendString(dst, f.Budget.String())
		dst = append(dst, `,"retry_after":`...)
		dst = jsonx.AppendInt(dst, f.RetryAfter)
		if f.ExceedsCapacity {
			dst = append(dst, `,"exceeds_capacity":true`...)
		}
		if f.Private {
			dst = append(dst, `,"private":true`...)
		}
		if f.Level != nil {
			dst = append(dst, `,"level":`...)
			dst = appendLevel(dst, *f.Level)
		}
		dst = append(dst, '}')
	}
	if len(r.Levels) > 0 {
		dst = append(dst, `,"levels":[`...)
		for i, l := range r.Levels {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"kind":`...)
			dst = strconv.AppendUint(dst, uint64(l.Kind), 10)
			dst = append(dst, `,"dimension":`...)
			dst = jsonx.AppendString(dst, l.Dimension.String())
			dst = append(dst, `,"budget":`...)
			dst = jsonx.AppendString(dst, l.Budget.String())
			dst = append(dst, `,"level":`...)
			dst = appendLevel(dst, l.Level)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if r.Hold != "" {
		dst = append(dst, `,"hold":`...)
		dst = jsonx.AppendString(dst, r.Hold)
	}
	if len(r.Skipped) > 0 {
		dst = jsonx.AppendStrings(append(dst, `,"skipped":`...), r.Skipped)
	}
	if r.Spend != nil {
		dst = append(dst, `,"spend":`...)
		dst = appendSpendVerdict(dst, r.Spend)
	}
	return append(dst, '}')
}

func appendLevel(dst []byte, l Level) []byte {
	dst = append(dst, `{"capacity":`...)
	dst = jsonx.AppendInt(dst, l.Capacity)
	dst = append(dst, `,"remaining":`...)
	dst = jsonx.AppendInt(dst, l.Remaining)
	dst = append(dst, `,"reset_unix":`...)
	dst = jsonx.AppendInt(dst, l.ResetUnix)
	return append(dst, '}')
}

// AppendEndResponse appends the JSON answer to settle and release.
func AppendEndResponse(dst []byte, r EndResponse) []byte {
	if r.Ended {
		return append(dst, `{"ended":true}`...)
	}
	return append(dst, `{"ended":false}`...)
}
