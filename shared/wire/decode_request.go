package wire

import (
	"strconv"
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// DecodeAdmitRequest reads the body of POST /v1/admit. It accepts what
// json.Unmarshal into AdmitRequest accepts (the last duplicate wins, null
// leaves a value alone or clears a slice, any type mismatch is an error,
// unknown members are ignored) with one deliberate difference: member
// names match exactly, as every encoder of this protocol writes them, not
// case-insensitively. Documents nested deeper than jsonx.MaxDepth are
// refused.
//
// The rule is decodeAdmitRequest. The service decodes one admission per
// decision, nearly always spelled as AppendAdmitHold writes it, so such a
// body is read by its shape (readAdmitRequest, its twin); any other
// spelling goes to the rule.
func DecodeAdmitRequest(b []byte) (AdmitRequest, error) {
	if r, ok := readAdmitRequest(b); ok {
		return r, nil
	}
	return decodeAdmitRequest(b)
}

// decodeAdmitRequest is DecodeAdmitRequest's reference: the request read
// as a jsonx.Value, member by member, as the other requests are.
func decodeAdmitRequest(b []byte) (AdmitRequest, error) {
	v := jsonx.Parse(b)
	if !v.Exists() {
		return AdmitRequest{}, errs.New("decode admit request: not a single valid JSON document")
	}
	var r AdmitRequest
	err := decodeObject(v, "request", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "hold_id":
			return decodeString(val, "hold_id", &r.HoldID)
		case "requests":
			return decodeSlice(val, "requests", &r.Requests, decodeOp)
		case "tokens":
			return decodeSlice(val, "tokens", &r.Tokens, decodeOp)
		case "overage":
			return decodeString(val, "overage", &r.Overage)
		case "spend":
			return decodeSpendAdmitPtr(val, &r.Spend)
		}
		return nil
	})
	if err != nil {
		return AdmitRequest{}, errs.Wrap("decode admit request", err)
	}
	return r, nil
}

// DecodeSettleRequest reads the body of POST /v1/settle (rules as
// DecodeAdmitRequest).
func DecodeSettleRequest(b []byte) (SettleRequest, error) {
	v := jsonx.Parse(b)
	if !v.Exists() {
		return SettleRequest{}, errs.New("decode settle request: not a single valid JSON document")
	}
	var r SettleRequest
	err := decodeObject(v, "request", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "hold":
			return decodeString(val, "hold", &r.Hold)
		case "actual":
			return decodeInt(val, "actual", &r.Actual)
		case "keys":
			return decodeStrings(val, &r.Keys)
		case "spend":
			return decodeSpendRecordPtr(val, &r.Spend)
		}
		return nil
	})
	if err != nil {
		return SettleRequest{}, errs.Wrap("decode settle request", err)
	}
	return r, nil
}

// DecodeReleaseRequest reads the body of POST /v1/release (rules as
// DecodeAdmitRequest).
func DecodeReleaseRequest(b []byte) (ReleaseRequest, error) {
	v := jsonx.Parse(b)
	if !v.Exists() {
		return ReleaseRequest{}, errs.New("decode release request: not a single valid JSON document")
	}
	var r ReleaseRequest
	err := decodeObject(v, "request", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "hold":
			return decodeString(val, "hold", &r.Hold)
		case "keys":
			return decodeStrings(val, &r.Keys)
		case "spend":
			return decodeBool(val, "spend", &r.Spend)
		case "team":
			return decodeString(val, "team", &r.Team)
		}
		return nil
	})
	if err != nil {
		return ReleaseRequest{}, errs.Wrap("decode release request", err)
	}
	return r, nil
}

func decodeStrings(v jsonx.Value, p *[]string) error {
	return decodeSlice(v, "keys", p, func(v jsonx.Value, s *string) error { return decodeString(v, "keys[]", s) })
}

func decodeOp(v jsonx.Value, o *Op) error {
	return decodeObject(v, "op", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "key":
			return decodeString(val, "op.key", &o.Key)
		case "kind":
			return decodeKind(val, "op.kind", &o.Kind)
		case "dimension":
			return decodeName(val, "op.dimension", &o.Dimension, limit.ParseDimension)
		case "limits":
			return decodeSlice(val, "op.limits", &o.Limits, decodeLimit)
		case "amount":
			return decodeInt(val, "op.amount", &o.Amount)
		case "private":
			return decodeBool(val, "op.private", &o.Private)
		}
		return nil
	})
}

func decodeLimit(v jsonx.Value, l *Limit) error {
	return decodeObject(v, "limit", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "budget":
			return decodeName(val, "limit.budget", &l.Budget, limit.ParsePeriod)
		case "capacity":
			return decodeInt(val, "limit.capacity", &l.Capacity)
		case "refill_per_sec":
			return decodeFloat(val, "limit.refill_per_sec", &l.RefillPerSec)
		}
		return nil
	})
}

func decodeFloat(v jsonx.Value, what string, p *float64) error {
	switch v.Kind {
	case jsonx.Number:
		f, ok := parseFloat(v.Raw)
		if !ok {
			return errs.New(what + ": " + string(v.Raw) + " is not a float64")
		}
		*p = f
	case jsonx.Null:
	default:
		return typeError(what, v)
	}
	return nil
}

// decodeName reads a period or dimension name, as encoding/json reads one
// through its UnmarshalText: null leaves it alone, a name parse does not
// know is an error. An unescaped name (every encoder's) is parsed in place.
func decodeName[T any](v jsonx.Value, what string, p *T, parse func(string) (T, bool)) error {
	switch v.Kind {
	case jsonx.String:
		name := v.Raw[1 : len(v.Raw)-1]
		var n T
		var ok bool
		if hasBackslash(name) {
			n, ok = parse(v.Str())
		} else if len(name) > 0 {
			// a view of the body, not a copy: parse only looks the name up
			n, ok = parse(unsafe.String(&name[0], len(name)))
		} else {
			n, ok = parse("")
		}
		if !ok {
			return errs.New(what + ": unknown name " + strconv.Quote(v.Str()))
		}
		*p = n
	case jsonx.Null:
	default:
		return typeError(what, v)
	}
	return nil
}
