package jsonx

import "unsafe"

// StrictCursor is a Cursor that checks the grammar as it walks, for a caller
// that reads each document once: Parse validates every byte and the walk then
// reads them again, which on a stream's events was a third of a chunk's cost.
// Valid, after the walk, says whether the document was exactly one valid
// JSON value, walked whole; what the walk read is to be used only then (on
// other bytes it may be nonsense, but it never panics). Once a step finds an
// error, Next and Enter report false, so every loop of the walk ends at once.
//
// The containers a walk enters are checked here (at most 64 levels; deeper
// is an error); the values it consumes, with the validator, so a document is
// Valid exactly when Parse accepts it, MaxDepth included.
type StrictCursor struct {
	d []byte
	i int
	// stack has bit n set when the n-th entered container is an object;
	// depth is how many are open.
	stack uint64
	depth int
	// first: no item of the innermost container read yet. slot: the cursor
	// stands where a value must come (after Next in an array, after a name
	// in an object). done: the top-level value is consumed.
	first, slot, done, bad bool
	escaped                bool // the last value consumed is a string with an escape
}

// maxStrictDepth is how many containers a strict walk may enter.
const maxStrictDepth = 64

// Strict starts a strict cursor before the one value data must hold.
func Strict(data []byte) StrictCursor { return StrictCursor{d: data} }

// Cursor starts a strict cursor before v, for a walk that descends into v
// instead of finding the end of every value first as ForEach and Members do.
// (A lenient cursor that trusted v's bytes, without checking them again, was
// removed: the strict one costs the module no more. DECISIONS, "One
// reference per charge".)
func (v Value) Cursor() StrictCursor { return Strict(v.Raw) }

// Valid reports that the walk consumed one whole valid value (every
// container it entered closed) and only whitespace follows.
func (c *StrictCursor) Valid() bool {
	return !c.bad && c.done && c.depth == 0 && skipWS(c.d, c.i) == len(c.d)
}

func (c *StrictCursor) inObject() bool { return c.depth > 0 && c.stack>>(c.depth-1)&1 != 0 }

// value claims the value position the cursor stands at: false (and the walk
// invalid) when no value may come here.
func (c *StrictCursor) value() bool {
	if c.bad {
		return false
	}
	if c.depth == 0 {
		if c.done {
			c.bad = true
		}
	} else if !c.slot {
		c.bad = true
	}
	c.slot = false
	return !c.bad
}

// consumed records the end of a value.
func (c *StrictCursor) consumed() {
	if c.depth == 0 {
		c.done = true
	}
}

// Escaped reports that the last name read (Key) or value consumed (Value,
// Skip) is a string holding an escape, so that a caller reading its text
// knows, without searching it again, whether it must be decoded.
func (c *StrictCursor) Escaped() bool { return c.escaped }

// Kind is the kind of the value at the cursor, read from its first byte
// without consuming it (Invalid at the end or after an error).
func (c *StrictCursor) Kind() Kind {
	c.i = skipWS(c.d, c.i)
	if c.bad || c.i >= len(c.d) {
		return Invalid
	}
	return kindOf(c.d[c.i])
}

// Offset is the index in the document of the next byte the cursor reads,
// as Cursor.Offset.
func (c *StrictCursor) Offset() int { return c.i }

// Enter consumes the opening bracket of the value at the cursor when it is
// of kind k (Object or Array); any other value is consumed and Enter
// reports false.
func (c *StrictCursor) Enter(k Kind) bool {
	c.i = skipWS(c.d, c.i)
	if c.i < len(c.d) && (k == Object || k == Array) && kindOf(c.d[c.i]) == k {
		return c.push(k == Object)
	}
	c.Skip()
	return false
}

// EnterItems enters the array or object at the cursor and reports which
// (object true for an object); any other value is consumed and ok is false.
func (c *StrictCursor) EnterItems() (object, ok bool) {
	c.i = skipWS(c.d, c.i)
	if c.i < len(c.d) {
		switch c.d[c.i] {
		case '[':
			return false, c.push(false)
		case '{':
			return true, c.push(true)
		}
	}
	c.Skip()
	return false, false
}

func (c *StrictCursor) push(object bool) bool {
	if !c.value() {
		return false
	}
	if c.depth == maxStrictDepth {
		c.bad = true
		return false
	}
	if object {
		c.stack |= 1 << c.depth
	} else {
		c.stack &^= 1 << c.depth
	}
	c.depth++
	c.i++
	c.first = true
	return true
}

// Next moves to the next item of the container the cursor is in, or
// consumes its closing bracket and reports false. In an object the caller
// reads the name (Name, Key) before the value.
func (c *StrictCursor) Next() bool {
	if c.bad {
		return false
	}
	d := c.d
	c.i = skipWS(d, c.i)
	if c.depth == 0 || c.slot || c.i >= len(d) {
		c.bad = true // no container, a value not consumed, or the end
		return false
	}
	object := c.inObject()
	switch ch := d[c.i]; {
	case object && ch == '}', !object && ch == ']':
		c.i++
		c.depth--
		c.first = false
		c.consumed()
		return false
	case ch == ',':
		if c.first {
			break
		}
		c.i = skipWS(d, c.i+1)
		if c.i < len(d) && d[c.i] != '}' && d[c.i] != ']' {
			c.slot = !object
			return true
		}
	default:
		if c.first {
			c.first, c.slot = false, !object
			return true
		}
	}
	c.bad = true
	return false
}

// NextItem is Next for a container entered with EnterItems; an object
// member's name is consumed, leaving the cursor at its value.
func (c *StrictCursor) NextItem(object bool) bool {
	if !c.Next() {
		return false
	}
	if object {
		c.Key()
	}
	return !c.bad
}

// Key consumes a member's name and its colon and returns the name's raw
// bytes (without the quotes, escapes undecoded); nil on an error. Key and
// Name each spell the steps out rather than share a function: a name is read
// on every member of every document walked, and in the VM the extra call was
// a tenth of a name's cost.
func (c *StrictCursor) Key() []byte {
	if c.bad || c.slot || c.depth == 0 || c.stack>>(c.depth-1)&1 == 0 {
		c.bad = true
		return nil
	}
	d := c.d
	start := skipWS(d, c.i)
	if start >= len(d) || d[start] != '"' {
		c.bad = true
		return nil
	}
	end, escaped, ok := shortString(d, start), false, true
	if end == 0 {
		end, escaped, ok = scanString(d, start)
	}
	colon := skipWS(d, end)
	if !ok || colon >= len(d) || d[colon] != ':' {
		c.bad = true
		return nil
	}
	c.i, c.slot, c.escaped = colon+1, true, escaped
	return d[start+1 : end-1 : end-1]
}

// Name is Key decoded: a view of the document when nothing is escaped, a
// new string otherwise; "" on an error.
func (c *StrictCursor) Name() string {
	if c.bad || c.slot || c.depth == 0 || c.stack>>(c.depth-1)&1 == 0 {
		c.bad = true
		return ""
	}
	d := c.d
	start := skipWS(d, c.i)
	if start >= len(d) || d[start] != '"' {
		c.bad = true
		return ""
	}
	end, escaped, ok := shortString(d, start), false, true
	if end == 0 {
		end, escaped, ok = scanString(d, start)
	}
	colon := skipWS(d, end)
	if !ok || colon >= len(d) || d[colon] != ':' {
		c.bad = true
		return ""
	}
	c.i, c.slot = colon+1, true
	if !escaped {
		return unsafe.String(&d[start+1], end-start-2)
	}
	s, _ := Unquote(c.d[start:end])
	return s
}

// Value consumes the value at the cursor and returns it; the zero Value on
// an error.
func (c *StrictCursor) Value() Value {
	start, end := c.consume()
	if end < 0 {
		return Value{}
	}
	return Value{Kind: kindOf(c.d[start]), Raw: c.d[start:end:end]}
}

// StringAfter is Value for a string value whose first bytes the caller has
// already read in the document and found plain: checked is an index past the
// opening quote such that the bytes from the quote up to checked hold no
// quote, no backslash and no control byte, so the string's check starts there
// and those bytes are read once (the estimator reads a message's text as it
// validates it). With checked right after the quote it is Value exactly. On
// anything but a string value at the cursor, or a checked outside the
// document or not past its quote, the walk is invalid.
func (c *StrictCursor) StringAfter(checked int) Value {
	if !c.value() {
		return Value{}
	}
	d := c.d
	start := skipWS(d, c.i)
	c.escaped = false
	if start >= len(d) || d[start] != '"' || checked <= start || checked > len(d) {
		c.bad = true
		return Value{}
	}
	// scanString starts at the byte after the index it is given.
	end, escaped, ok := scanString(d, checked-1)
	if !ok {
		c.bad = true
		return Value{}
	}
	c.i, c.escaped = end, escaped
	c.consumed()
	return Value{Kind: String, Raw: d[start:end:end]}
}

// Rest is the document from the value at the cursor on (whitespace
// skipped), for a caller that reads a value itself and then hands it over
// with Took.
func (c *StrictCursor) Rest() []byte {
	c.i = skipWS(c.d, c.i)
	return c.d[c.i:]
}

// Took consumes the n bytes at the start of Rest as one value for a caller
// that has checked them itself: they must be exactly one value of the
// grammar, its containers nested depth deep. It is for a decoder that reads
// a value spelled exactly as its encoder writes it faster than a walk does
// (wire's admission ops) and hands anything else to the walk. Like Skip it
// reports false, the walk invalid, where no value may come or where the
// value would nest deeper than MaxDepth.
func (c *StrictCursor) Took(n, depth int) bool {
	if !c.value() {
		return false
	}
	i := skipWS(c.d, c.i)
	if n <= 0 || n > len(c.d)-i || c.depth+depth > MaxDepth {
		c.bad = true
		return false
	}
	c.i, c.escaped = i+n, false
	c.consumed()
	return true
}

// Skip consumes the value at the cursor.
func (c *StrictCursor) Skip() { c.consume() }

// consume checks the value at the cursor and moves past it; end is -1 on
// an error. Scalars are checked directly; a container goes to the
// validator, within what is left of MaxDepth.
func (c *StrictCursor) consume() (start, end int) {
	if !c.value() {
		return 0, -1
	}
	d := c.d
	start = skipWS(d, c.i)
	ok := false
	c.escaped = false
	if start < len(d) {
		switch d[start] {
		case '"':
			if end, ok = shortString(d, start), true; end == 0 {
				end, c.escaped, ok = scanString(d, start)
			}
		case 't':
			end, ok = start+4, hasLiteral(d, start, "true")
		case 'f':
			end, ok = start+5, hasLiteral(d, start, "false")
		case 'n':
			end, ok = start+4, hasLiteral(d, start, "null")
		case '{', '[':
			var depth int
			end, depth, ok = validate(d, start)
			ok = ok && c.depth+depth <= MaxDepth
		default:
			end, ok = validNumber(d, start)
		}
	}
	if !ok {
		c.bad = true
		return 0, -1
	}
	c.i = end
	c.consumed()
	return start, end
}

// NextMember is Next followed, on an object's member, by Key, in one call,
// with the cursor left at the value's first byte: a walk that reads every
// member's name (the estimator, on each member of each message) pays one
// call where it paid three (Next, Key and the Kind that follows), and in the
// VM a call costs some 150 instructions before any work (prologue, stack
// check, arguments reloaded from the Go stack), and the three repeated the
// same checks of the cursor's state. ok is what Next reports and key what
// Key then returns (nil on an error, the walk invalid). Outside an object it
// is Next then Key, which makes the walk invalid.
func (c *StrictCursor) NextMember() (key []byte, ok bool) {
	if c.bad || c.slot || c.depth == 0 || c.stack>>(c.depth-1)&1 == 0 {
		if !c.Next() {
			return nil, false
		}
		return c.Key(), true
	}
	d := c.d
	i := skipWS(d, c.i)
	if i >= len(d) {
		c.i, c.bad = i, true
		return nil, false
	}
	switch d[i] {
	case '}':
		c.i = i + 1
		c.depth--
		c.first = false
		c.consumed()
		return nil, false
	case ',':
		if c.first {
			c.i, c.bad = i, true
			return nil, false
		}
		i = skipWS(d, i+1)
		if i >= len(d) || d[i] == '}' || d[i] == ']' {
			c.i, c.bad = i, true
			return nil, false
		}
	default:
		if !c.first {
			c.i, c.bad = i, true
			return nil, false
		}
		c.first = false
	}
	// Next moves here; then Key's checks.
	if d[i] != '"' {
		c.i, c.bad = i, true
		return nil, true
	}
	end, escaped, sok := shortString(d, i), false, true
	if end == 0 {
		end, escaped, sok = scanString(d, i)
	}
	colon := skipWS(d, end)
	if !sok || colon >= len(d) || d[colon] != ':' {
		c.i, c.bad = i, true
		return nil, true
	}
	c.i, c.slot, c.escaped = skipWS(d, colon+1), true, escaped
	return d[i+1 : end-1 : end-1], true
}

// EnterObject enters the object at the cursor and reports true; on any
// other value it consumes nothing and reports false, so the caller reads the
// value as it is (Value, Skip). It is Kind then Enter(Object) in one call
// for a walk over an array's objects (the estimator's messages, after Next),
// as NextMember is for a walk over members.
func (c *StrictCursor) EnterObject() bool {
	i := skipWS(c.d, c.i)
	c.i = i
	if c.bad || i >= len(c.d) || c.d[i] != '{' {
		return false
	}
	return c.push(true)
}
