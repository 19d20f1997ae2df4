package wire

import (
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// DecodeAdmitResponse reads the service's answer to an admission. It runs in
// the filter on every remote admission, so it reads with jsonx (encoding/json
// links syscall, which Envoy's proxy-wasm host traps at start-up), yet it
// accepts and rejects what json.Unmarshal into AdmitResponse does: the last
// duplicate wins, null leaves a value alone (and clears a pointer or slice),
// and any type mismatch is an error. Two differences: member names match
// exactly, not case-insensitively (encoding/json would also take "ADMITTED"
// and two non-ASCII runes that fold onto k and s; every encoder of this
// protocol is this project's and writes the names exactly, so a name in
// another case is an unknown member, ignored), and documents nested deeper
// than jsonx.MaxDepth are refused.
func DecodeAdmitResponse(b []byte) (AdmitResponse, error) {
	v := jsonx.Parse(b)
	if !v.Exists() {
		return AdmitResponse{}, errs.New("decode admit response: not a single valid JSON document")
	}
	var r AdmitResponse
	if err := decodeAdmitResponse(v, &r); err != nil {
		return AdmitResponse{}, errs.Wrap("decode admit response", err)
	}
	return r, nil
}

func decodeAdmitResponse(v jsonx.Value, r *AdmitResponse) error {
	return decodeObject(v, "response", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "admitted":
			return decodeBool(val, "admitted", &r.Admitted)
		case "aborted":
			return decodeBool(val, "aborted", &r.Aborted)
		case "refusal":
			return decodeRefusalPtr(val, &r.Refusal)
		case "levels":
			return decodeSlice(val, "levels", &r.Levels, decodeOpLevel)
		case "hold":
			return decodeString(val, "hold", &r.Hold)
		case "skipped":
			return decodeSlice(val, "skipped", &r.Skipped, func(v jsonx.Value, s *string) error {
				return decodeString(v, "skipped", s)
			})
		case "spend":
			return decodeSpendVerdictPtr(val, &r.Spend)
		}
		return nil
	})
}

// decodeRefusalPtr follows encoding/json for a pointer: null clears it, and
// an object fills the existing Refusal (a duplicate key merges into it).
func decodeRefusalPtr(v jsonx.Value, p **Refusal) error {
	if v.Kind == jsonx.Null {
		*p = nil
		return nil
	}
	if v.Kind != jsonx.Object {
		return typeError("refusal", v)
	}
	if *p == nil {
		*p = new(Refusal)
	}
	f := *p
	return decodeObject(v, "refusal", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "kind":
			return decodeKind(val, "refusal.kind", &f.Kind)
		case "dimension":
			return decodeName(val, "refusal.dimension", &f.Dimension, limit.ParseDimension)
		case "budget":
			return decodeName(val, "refusal.budget", &f.Budget, limit.ParsePeriod)
		case "retry_after":
			return decodeInt(val, "refusal.retry_after", &f.RetryAfter)
		case "exceeds_capacity":
			return decodeBool(val, "refusal.exceeds_capacity", &f.ExceedsCapacity)
		case "private":
			return decodeBool(val, "refusal.private", &f.Private)
		case "level":
			if val.Kind == jsonx.Null {
				f.Level = nil
				return nil
			}
			if val.Kind != jsonx.Object {
				return typeError("refusal.level", val)
			}
			if f.Level == nil {
				f.Level = new(Level)
			}
			return decodeLevel(val, f.Level)
		}
		return nil
	})
}

func decodeOpLevel(v jsonx.Value, l *OpLevel) error {
	return decodeObject(v, "levels[]", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "kind":
			return decodeKind(val, "levels[].kind", &l.Kind)
		case "dimension":
			return decodeName(val, "levels[].dimension", &l.Dimension, limit.ParseDimension)
		case "budget":
			return decodeName(val, "levels[].budget", &l.Budget, limit.ParsePeriod)
		case "level":
			return decodeLevel(val, &l.Level)
		}
		return nil
	})
}

func decodeLevel(v jsonx.Value, l *Level) error {
	return decodeObject(v, "level", func(key []byte, val jsonx.Value) error {
		switch string(key) {
		case "capacity":
			return decodeInt(val, "level.capacity", &l.Capacity)
		case "remaining":
			return decodeInt(val, "level.remaining", &l.Remaining)
		case "reset_unix":
			return decodeInt(val, "level.reset_unix", &l.ResetUnix)
		}
		return nil
	})
}

// decodeObject calls field for each member of an object in document order,
// with the member's decoded name; null is a no-op, as encoding/json leaves a
// struct alone for null.
func decodeObject(v jsonx.Value, what string, field func(key []byte, val jsonx.Value) error) error {
	if v.Kind == jsonx.Null {
		return nil
	}
	if v.Kind != jsonx.Object {
		return typeError(what, v)
	}
	var err error
	v.ForEach(func(raw []byte, val jsonx.Value) bool {
		key := raw
		if hasBackslash(raw) {
			// Escaped names are rare; only they pay for decoding.
			quoted := make([]byte, 0, len(raw)+2)
			quoted = append(append(append(quoted, '"'), raw...), '"')
			s, ok := jsonx.Unquote(quoted)
			if !ok {
				err = errs.New(what + ": bad member name")
				return false
			}
			key = []byte(s)
		}
		err = field(key, val)
		return err == nil
	})
	return err
}

// decodeSlice follows encoding/json for a slice: null clears it, [] makes it
// empty but non-nil, and elements decode into the existing backing array,
// so a duplicate key merges into what the first one decoded.
func decodeSlice[T any](v jsonx.Value, what string, p *[]T, elem func(jsonx.Value, *T) error) error {
	switch v.Kind {
	case jsonx.Null:
		*p = nil
		return nil
	case jsonx.Array:
	default:
		return typeError(what, v)
	}
	s := *p
	if n := v.Len(); n > cap(s) {
		// One allocation for the whole array. The old backing array is
		// copied up to its capacity, since encoding/json would decode into
		// the elements a longer earlier duplicate left there.
		grown := make([]T, len(s), n)
		copy(grown[:cap(s)], s[:cap(s)])
		s = grown
	}
	i := 0
	var err error
	v.ForEach(func(_ []byte, val jsonx.Value) bool {
		if i < cap(s) {
			s = s[:i+1]
		} else {
			var zero T
			s = append(s[:i], zero)
		}
		err = elem(val, &s[i])
		i++
		return err == nil
	})
	if err != nil {
		return err
	}
	if i == 0 {
		*p = make([]T, 0)
		return nil
	}
	*p = s[:i]
	return nil
}

func decodeBool(v jsonx.Value, what string, p *bool) error {
	switch v.Kind {
	case jsonx.True:
		*p = true
	case jsonx.False:
		*p = false
	case jsonx.Null:
	default:
		return typeError(what, v)
	}
	return nil
}

func decodeString(v jsonx.Value, what string, p *string) error {
	switch v.Kind {
	case jsonx.String:
		*p = v.Str()
	case jsonx.Null:
	default:
		return typeError(what, v)
	}
	return nil
}

func decodeInt(v jsonx.Value, what string, p *int64) error {
	switch v.Kind {
	case jsonx.Number:
		n, ok := parseInt64(v.Raw)
		if !ok {
			return errs.New(what + ": " + string(v.Raw) + " is not a 64-bit integer")
		}
		*p = n
	case jsonx.Null:
	default:
		return typeError(what, v)
	}
	return nil
}

// decodeKind accepts what strconv.ParseUint does and a uint8 holds; like
// encoding/json it refuses a sign, a fraction or an exponent.
func decodeKind(v jsonx.Value, what string, p *limit.Kind) error {
	switch v.Kind {
	case jsonx.Number:
		k, ok := parseKind(v.Raw)
		if !ok {
			return errs.New(what + ": " + string(v.Raw) + " is not a kind")
		}
		*p = k
	case jsonx.Null:
	default:
		return typeError(what, v)
	}
	return nil
}

// parseInt64 reads a JSON number that strconv.ParseInt(s, 10, 64) accepts,
// as encoding/json does for an int64 field: the wire's rule is that an
// integer is spelled without a point or an exponent (1.0 and 1e3 are type
// errors there); jsonx reads the digits.
func parseInt64(b []byte) (int64, bool) {
	if n, ok := jsonx.PlainInteger(b); ok {
		return n, true
	}
	for _, c := range b {
		if c == '.' || c == 'e' || c == 'E' {
			return 0, false
		}
	}
	n, ok := jsonx.ParseInteger(b)
	return n.Value, ok && !n.Overflow
}

// parseKind reads a JSON number as decodeKind does.
func parseKind(b []byte) (limit.Kind, bool) {
	if len(b) == 0 || b[0] == '-' {
		return 0, false
	}
	n, ok := parseInt64(b)
	return limit.Kind(n), ok && n <= 255
}

func typeError(what string, v jsonx.Value) error {
	return errs.New(what + ": unexpected " + kindName(v.Kind))
}

func kindName(k jsonx.Kind) string {
	switch k {
	case jsonx.Null:
		return "null"
	case jsonx.False, jsonx.True:
		return "bool"
	case jsonx.Number:
		return "number"
	case jsonx.String:
		return "string"
	case jsonx.Array:
		return "array"
	case jsonx.Object:
		return "object"
	}
	return "value"
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}
