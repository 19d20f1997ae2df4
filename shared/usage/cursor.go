package usage

import (
	"bytes"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// cursor walks a document that jsonx.Parse has already validated, front to
// back, touching each byte once. jsonx's Members and ForEach find the end of
// every value before handing it over, so descending level by level through a
// chunk rescans its deepest bytes once per level; a stream chunk is mostly
// those bytes, and in the wasm VM that rescanning was most of its cost.
//
// A cursor trusts the grammar but not the bytes: on input that did not pass
// validation it still stays in bounds and always advances, so it can return
// nonsense but never panic or loop.
type cursor struct {
	d []byte
	i int
}

// ws moves past whitespace.
func (c *cursor) ws() {
	for c.i < len(c.d) {
		switch c.d[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// enter consumes the opening bracket of the value at the cursor when it is
// open ('{' or '['); any other value is skipped and enter reports false.
func (c *cursor) enter(open byte) bool {
	c.ws()
	if c.i < len(c.d) && c.d[c.i] == open {
		c.i++
		return true
	}
	c.skip()
	return false
}

// enterItems enters the array or object at the cursor: the two containers
// whose items ForEach visits. Any other value is skipped and ok is false.
func (c *cursor) enterItems() (object, ok bool) {
	c.ws()
	if c.i < len(c.d) {
		switch c.d[c.i] {
		case '[':
			c.i++
			return false, true
		case '{':
			c.i++
			return true, true
		}
	}
	c.skip()
	return false, false
}

// nextItem is next for a container entered with enterItems: an object
// member's name is consumed, leaving the cursor at its value.
func (c *cursor) nextItem(object bool) bool {
	if !c.next() {
		return false
	}
	if object {
		c.key()
	}
	return true
}

// next moves to the next member or element of the container the cursor is
// in, consuming the separating comma, or consumes the closing bracket and
// reports false. The caller must have consumed the previous member's value.
func (c *cursor) next() bool {
	c.ws()
	if c.i >= len(c.d) {
		return false
	}
	switch c.d[c.i] {
	case ',':
		c.i++
		c.ws()
		return c.i < len(c.d)
	case '}', ']':
		c.i++
		return false
	}
	return true // the first member or element
}

// key consumes a member's name and colon and returns the name decoded. Names
// are short and rarely escaped, so they are scanned inline; one with an escape
// is decoded with an allocation (the names this package matches never need
// one).
func (c *cursor) key() string {
	d := c.d
	if c.i >= len(d) || d[c.i] != '"' {
		c.skip()
		c.colon()
		return ""
	}
	start := c.i + 1
	j := start
	for j < len(d) && d[j] != '"' && d[j] != '\\' {
		j++
	}
	name := ""
	if j < len(d) && d[j] == '"' {
		name = bytesString(d[start:j])
		c.i = j + 1
	} else {
		c.skipString()
		name, _ = jsonx.Unquote(d[start-1 : c.i])
	}
	c.colon()
	return name
}

// colon consumes the colon after a member's name.
func (c *cursor) colon() {
	if c.i < len(c.d) && c.d[c.i] == ':' {
		c.i++
		return
	}
	c.ws()
	if c.i < len(c.d) && c.d[c.i] == ':' {
		c.i++
	}
}

// value consumes the value at the cursor and returns it as a jsonx.Value.
func (c *cursor) value() jsonx.Value {
	c.ws()
	start := c.i
	c.skip()
	if start >= c.i {
		return jsonx.Value{}
	}
	k := kindOf(c.d[start])
	if k == jsonx.Invalid {
		return jsonx.Value{}
	}
	return jsonx.Value{Kind: k, Raw: c.d[start:c.i:c.i]}
}

// skip consumes the value at the cursor: a string, a whole container, or a
// literal or number. It advances at least one byte unless at the end.
func (c *cursor) skip() {
	c.ws()
	depth := 0
	for c.i < len(c.d) {
		switch c.d[c.i] {
		case '"':
			c.skipString()
		case '{', '[':
			depth++
			c.i++
			continue
		case '}', ']':
			if depth == 0 { // a scalar's end; not ours to take
				return
			}
			depth--
			c.i++
		case ',', ':':
			if depth == 0 {
				return
			}
			c.i++
			continue
		default:
			c.i++
			if depth == 0 {
				c.skipScalar()
				return
			}
			continue
		}
		if depth == 0 {
			return
		}
	}
}

// skipScalar consumes the rest of a literal or number.
func (c *cursor) skipScalar() {
	for c.i < len(c.d) {
		switch c.d[c.i] {
		case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
			return
		}
		c.i++
	}
}

// skipString consumes the string whose opening quote is at the cursor.
func (c *cursor) skipString() {
	open := c.i
	c.i++
	for {
		q := bytes.IndexByte(c.d[c.i:], '"')
		if q < 0 {
			c.i = len(c.d)
			return
		}
		c.i += q
		n := 0
		for j := c.i - 1; j > open && c.d[j] == '\\'; j-- {
			n++
		}
		c.i++
		if n&1 == 0 {
			return
		}
	}
}

// kindOf is the kind of the value that starts with c.
func kindOf(c byte) jsonx.Kind {
	switch c {
	case '{':
		return jsonx.Object
	case '[':
		return jsonx.Array
	case '"':
		return jsonx.String
	case 't':
		return jsonx.True
	case 'f':
		return jsonx.False
	case 'n':
		return jsonx.Null
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return jsonx.Number
	}
	return jsonx.Invalid
}
