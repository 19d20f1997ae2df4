package wire

import (
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// The admission's plan is decoded by walking it with a jsonx.StrictCursor:
// ForEach finds the end of each value before handing it over, so descending
// through request, ops and limits with it rescanned a limit's bytes once per
// level (five passes over most of the body, a sixth of the service's CPU per
// admission), and a Parse before the walk read every byte once more. The
// strict walk reads each byte once, checking the grammar as it goes, and
// agrees with the ForEach decoders it replaces on every input (the
// encoding/json agreement tests and fuzz targets pin both).

// walkObject calls field for each member of the object at the cursor, as
// decodeObject does for a Value; field must consume the member's value.
func walkObject(c *jsonx.StrictCursor, what string, field func(key []byte, c *jsonx.StrictCursor) error) error {
	if ok, err := enterObject(c, what); !ok {
		return err
	}
	for {
		key, ok, err := nextMember(c, what)
		if !ok {
			return nil
		}
		if err != nil {
			return err
		}
		if err := field(key, c); err != nil {
			return err
		}
	}
}

// enterObject enters the object at the cursor. It reports false, having
// consumed the value, for null (nothing to decode, as decodeObject) and for
// any other kind (with decodeObject's type error).
func enterObject(c *jsonx.StrictCursor, what string) (bool, error) {
	switch c.Kind() {
	case jsonx.Null:
		c.Skip()
		return false, nil
	case jsonx.Object:
		return c.Enter(jsonx.Object), nil
	}
	return false, typeError(what, c.Value())
}

// nextMember moves to the next member of the object the cursor is in and
// consumes its name and colon, escapes decoded; ok is false after the
// last member. It is one cursor call per member (NextMember, whose Escaped
// says whether the name needs decoding) where Next, Key and a search of the
// name for a backslash were three passes: the service walks some forty
// members per admission.
func nextMember(c *jsonx.StrictCursor, what string) (key []byte, ok bool, err error) {
	key, ok = c.NextMember()
	if ok && c.Escaped() {
		// Escaped names are rare; only they pay for decoding.
		s, ok := jsonx.Unquote(append(append(append(make([]byte, 0, len(key)+2), '"'), key...), '"'))
		if !ok {
			return nil, true, errs.New(what + ": bad member name")
		}
		key = []byte(s)
	}
	return key, ok, nil
}

// walkFreshSlice is decodeFreshSlice on a cursor: it walks the array's
// elements with walk when the slice is new (every encoder's case) and
// hands anything else (null, a repeated member, a type error) to
// decodeSlice with elem, the Value decoder of the same element.
func walkFreshSlice[T any](c *jsonx.StrictCursor, what string, p *[]T, walk func(*jsonx.StrictCursor, *T) error, elem func(jsonx.Value, *T) error, hint int) error {
	if cap(*p) > 0 || c.Kind() != jsonx.Array {
		return decodeSlice(c.Value(), what, p, elem)
	}
	c.Enter(jsonx.Array)
	var s []T
	for c.Next() {
		if s == nil {
			s = make([]T, 0, hint)
		}
		var zero T
		s = append(s, zero)
		if err := walk(c, &s[len(s)-1]); err != nil {
			return err
		}
	}
	if s == nil {
		s = make([]T, 0)
	}
	*p = s
	return nil
}

// walkOp decodes the op at the cursor into o, which is zero: by its shape
// when it is spelled as appendOps writes it (readOp), otherwise by walking
// its members.
func walkOp(c *jsonx.StrictCursor, o *Op) error {
	if n, depth, ok := readOp(c.Rest(), o); ok {
		c.Took(n, depth)
		return nil
	}
	*o = Op{}
	return walkOpMembers(c, o)
}

// walkOpMembers and walkLimit loop over the members themselves rather than
// through walkObject: a closure capturing the element would be one heap
// allocation per op and per limit.
func walkOpMembers(c *jsonx.StrictCursor, o *Op) error {
	if ok, err := enterObject(c, "op"); !ok {
		return err
	}
	for {
		key, ok, err := nextMember(c, "op")
		if !ok {
			return nil
		}
		if err != nil {
			return err
		}
		switch string(key) {
		case "key":
			err = decodeString(c.Value(), "op.key", &o.Key)
		case "kind":
			err = decodeKind(c.Value(), "op.kind", &o.Kind)
		case "dimension":
			err = decodeName(c.Value(), "op.dimension", &o.Dimension, limit.ParseDimension)
		case "limits":
			err = walkFreshSlice(c, "op.limits", &o.Limits, walkLimit, decodeLimit, 2)
		case "amount":
			err = decodeInt(c.Value(), "op.amount", &o.Amount)
		case "private":
			err = decodeBool(c.Value(), "op.private", &o.Private)
		default:
			c.Skip()
		}
		if err != nil {
			return err
		}
	}
}

func walkLimit(c *jsonx.StrictCursor, l *Limit) error {
	if ok, err := enterObject(c, "limit"); !ok {
		return err
	}
	for {
		key, ok, err := nextMember(c, "limit")
		if !ok {
			return nil
		}
		if err != nil {
			return err
		}
		switch string(key) {
		case "budget":
			err = decodeName(c.Value(), "limit.budget", &l.Budget, limit.ParsePeriod)
		case "capacity":
			err = decodeInt(c.Value(), "limit.capacity", &l.Capacity)
		case "refill_per_sec":
			err = decodeFloat(c.Value(), "limit.refill_per_sec", &l.RefillPerSec)
		default:
			c.Skip()
		}
		if err != nil {
			return err
		}
	}
}
