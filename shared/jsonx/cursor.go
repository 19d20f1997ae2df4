package jsonx

import "unsafe"

// Cursor reads a document front to back, finding the end of each value only
// as it consumes it. ForEach and Members find the end of every value before
// handing it over, so a caller that descends level by level through them
// rescans the deepest bytes once per level; a chat request is mostly those
// bytes (its messages), and in the wasm VM that rescanning was most of the
// estimator's cost. A Cursor lets such a caller descend instead of rescanning,
// using the same skipping code as the rest of the package.
//
// It is meant for bytes Parse accepted. On any other bytes it may return
// nonsense but never panics, and each of Enter, Key, Value and Skip moves
// past at least one byte unless the cursor is at the end, so a loop of Next
// whose body calls one of them always ends.
type Cursor struct {
	d []byte
	i int
}

// Cursor starts a cursor before v, for a walk that descends into v.
func (v Value) Cursor() Cursor { return Cursor{d: v.Raw} }

// ws moves past whitespace.
func (c *Cursor) ws() {
	c.i = skipWS(c.d, c.i)
}

// Kind is the kind of the value at the cursor, read from its first byte
// without consuming it: the caller decides from it whether to Enter.
func (c *Cursor) Kind() Kind {
	c.ws()
	if c.i >= len(c.d) {
		return Invalid
	}
	return kindOf(c.d[c.i])
}

// Enter consumes the opening bracket of the value at the cursor when it is
// of kind k (Object or Array), so that Next steps through its members or
// elements. Any other value is skipped and Enter reports false.
func (c *Cursor) Enter(k Kind) bool {
	c.ws()
	if c.i < len(c.d) && (k == Object || k == Array) && kindOf(c.d[c.i]) == k {
		c.i++
		return true
	}
	c.Skip()
	return false
}

// Next moves to the next member or element of the container the cursor is
// in, consuming the separating comma, or consumes the closing bracket and
// reports false. The caller must have consumed the previous member's value
// (and, in an object, must call Key before reading the value).
func (c *Cursor) Next() bool {
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

// Key consumes a member's name and its colon and returns the name's raw
// bytes, as ForEach gives them: without the quotes, escapes undecoded. It
// aliases the document.
func (c *Cursor) Key() []byte {
	d := c.d
	var key []byte
	if c.i < len(d) && d[c.i] == '"' {
		end := skipString(d, c.i)
		if end-1 > c.i && d[end-1] == '"' {
			key = d[c.i+1 : end-1 : end-1]
		}
		c.i = end
	} else {
		c.Skip()
	}
	c.ws()
	if c.i < len(d) && d[c.i] == ':' {
		c.i++
	}
	return key
}

// Value consumes the value at the cursor and returns it; a caller that will
// descend into it should Enter instead, which does not scan it first.
func (c *Cursor) Value() Value {
	c.ws()
	start := c.i
	if start >= len(c.d) {
		return Value{}
	}
	end := skipValue(c.d, start)
	if end <= start {
		c.i = start + 1 // not a value: step over it, as Skip does
		return Value{}
	}
	c.i = end
	k := kindOf(c.d[start])
	if k == Invalid {
		return Value{}
	}
	return Value{Kind: k, Raw: c.d[start:end:end]}
}

// Skip consumes the value at the cursor.
func (c *Cursor) Skip() {
	c.ws()
	if c.i >= len(c.d) {
		return
	}
	end := skipValue(c.d, c.i)
	if end <= c.i {
		end = c.i + 1 // not a value (a stray ',' or ':'): step over it
	}
	c.i = end
}

// Name consumes a member's name and its colon, as Key does, and returns the
// name decoded, as Members gives it: a view of the document when nothing is
// escaped (no copy; the common case), a new string otherwise. A name that is
// not a valid string literal is "".
func (c *Cursor) Name() string {
	d, i := c.d, c.i
	if i < len(d) && d[i] == '"' {
		// Names are short and rarely escaped: a word test, then a byte
		// loop, finds the closing quote or the escape that needs decoding
		// (in the VM the byte loop alone was a tenth of a stream chunk's cost).
		j := i + 1
		for j+8 <= len(d) && littleEndian {
			w := load64(d, j)
			if m := quoteStops(w) | hasZero(w^(lsb*'\\')); m != 0 {
				j += firstFlag(m)
				break
			}
			j += 8
		}
		for j < len(d) && d[j] != '"' && d[j] != '\\' {
			j++
		}
		if j < len(d) && d[j] == '"' {
			c.i = j + 1
			c.ws()
			if c.i < len(d) && d[c.i] == ':' {
				c.i++
			}
			return unsafe.String(unsafe.SliceData(d[i+1:j]), j-i-1)
		}
	}
	start := c.i
	k := c.Key()
	if !hasBackslash(k) {
		return unsafe.String(unsafe.SliceData(k), len(k))
	}
	// k sits between the quotes at start and start+len(k)+1.
	s, _ := Unquote(c.d[start : start+len(k)+2])
	return s
}

// EnterItems enters the array or object at the cursor, the two containers
// whose items ForEach visits, and reports which it entered (object true for
// an object). Any other value is skipped and ok is false.
func (c *Cursor) EnterItems() (object, ok bool) {
	switch c.Kind() {
	case Array:
		c.i++
		return false, true
	case Object:
		c.i++
		return true, true
	}
	c.Skip()
	return false, false
}

// NextItem is Next for a container entered with EnterItems: an object
// member's name is consumed, leaving the cursor at its value, so arrays and
// objects are walked by the same loop.
func (c *Cursor) NextItem(object bool) bool {
	if !c.Next() {
		return false
	}
	if object {
		c.Key()
	}
	return true
}

// Offset is the index in the document (the Raw the cursor started on) of
// the next byte the cursor reads: right after a value Value or Skip
// consumed, so a caller can locate the values it walked and edit them
// later without parsing again.
func (c *Cursor) Offset() int { return c.i }
