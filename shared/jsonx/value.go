package jsonx

// Kind tells which JSON type a Value holds; Invalid doubles as "absent" so a
// failed lookup needs no separate error.
type Kind uint8

// The JSON kinds. Invalid is the zero value so that Value{} means "absent".
const (
	Invalid Kind = iota
	Null
	False
	True
	Number
	String
	Array
	Object
)

// MaxDepth is the deepest nesting of arrays and objects Parse accepts. It
// bounds the validator's bit stack (MaxDepth bits on the Go stack). It is
// encoding/json's own limit and above what Python backends accept: a body the
// filter cannot parse is admitted with no reservation, so a lower limit than
// the backend's would let a deeply nested junk field buy an unmetered request.
const MaxDepth = 10000

// Value is a view of one JSON value inside a document. Raw is the value's exact
// bytes (for a string, including the quotes) and aliases the document, so a
// Value is only as stable as the buffer it was parsed from. The zero Value
// (Kind Invalid, Raw nil) means "absent".
type Value struct {
	Kind Kind
	Raw  []byte
}

// Parse returns the single top-level value of data after trimming whitespace.
// It validates the whole document in one pass so that later lookups can skip
// over values without re-checking them; anything that is not exactly one valid
// JSON value (or nests deeper than MaxDepth) yields the zero Value.
func Parse(data []byte) Value {
	start := skipWS(data, 0)
	end, _, ok := validate(data, start)
	if !ok || skipWS(data, end) != len(data) {
		return Value{}
	}
	return Value{Kind: kindOf(data[start]), Raw: data[start:end]}
}

// Valid reports whether data is exactly one JSON value (surrounded by optional
// whitespace), so callers can reject a malformed body before acting on it.
// It agrees with encoding/json's Valid except that it refuses nesting deeper
// than MaxDepth.
func Valid(data []byte) bool {
	start := skipWS(data, 0)
	end, _, ok := validate(data, start)
	return ok && skipWS(data, end) == len(data)
}

// Exists reports whether a lookup found something; it reads better at call
// sites than comparing Kind with Invalid.
func (v Value) Exists() bool { return v.Kind != Invalid }

// kindOf maps the first byte of a value to its Kind; bytes that cannot start a
// value give Invalid so hand-built Values degrade to "absent".
func kindOf(c byte) Kind {
	switch c {
	case '{':
		return Object
	case '[':
		return Array
	case '"':
		return String
	case 't':
		return True
	case 'f':
		return False
	case 'n':
		return Null
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return Number
	}
	return Invalid
}
