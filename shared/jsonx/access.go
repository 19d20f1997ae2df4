package jsonx

import (
	"unicode/utf8"
	"unsafe"
)

// Get returns the first member of an object named key (keys are compared
// after decoding, invalid UTF-8 on either side counting as U+FFFD). First match, like gjson, so the filter reads the same
// member it always did; note that many upstream parsers keep the LAST
// duplicate instead. Absent members and non-objects give the zero Value.
func (v Value) Get(key string) Value {
	if v.Kind != Object {
		return Value{}
	}
	d := v.Raw
	plain := utf8.ValidString(key)
	for m, ok := firstMember(d); ok; m, ok = nextMember(d, m) {
		if keyEquals(d[m.keyStart:m.keyEnd], m.escaped, key, plain) {
			return valueAt(d, m.valStart, m.valEnd)
		}
	}
	return Value{}
}

// Path follows keys through nested objects, so `usage.prompt_tokens` style
// lookups read as one call.
func (v Value) Path(keys ...string) Value {
	for _, k := range keys {
		v = v.Get(k)
	}
	return v
}

// Index returns element i of an array, or the zero Value when out of range or
// when v is not an array.
func (v Value) Index(i int) Value {
	if v.Kind != Array || i < 0 {
		return Value{}
	}
	d := v.Raw
	for s, e, ok := firstElement(d); ok; s, e, ok = nextElement(d, e) {
		if i == 0 {
			return valueAt(d, s, e)
		}
		i--
	}
	return Value{}
}

// Len counts array elements or object members (0 for anything else), one scan
// without allocation.
func (v Value) Len() int {
	n := 0
	d := v.Raw
	switch v.Kind {
	case Array:
		for _, e, ok := firstElement(d); ok; _, e, ok = nextElement(d, e) {
			n++
		}
	case Object:
		for m, ok := firstMember(d); ok; m, ok = nextMember(d, m) {
			n++
		}
	}
	return n
}

// ForEach visits object members (key is the raw key between the quotes and may
// hold escapes: use Unquote or Members when they matter) or array elements
// (key nil) in order, stopping when fn returns false. It never allocates, which
// is why keys are raw.
func (v Value) ForEach(fn func(key []byte, val Value) bool) {
	d := v.Raw
	switch v.Kind {
	case Array:
		for s, e, ok := firstElement(d); ok; s, e, ok = nextElement(d, e) {
			if !fn(nil, valueAt(d, s, e)) {
				return
			}
		}
	case Object:
		for m, ok := firstMember(d); ok; m, ok = nextMember(d, m) {
			if !fn(d[m.keyStart:m.keyEnd:m.keyEnd], valueAt(d, m.valStart, m.valEnd)) {
				return
			}
		}
	}
}

// Members visits object members with decoded keys. Keys without escapes are
// NOT copied: the string aliases the document, so it is only valid while the
// document's buffer is left unchanged — clone it (strings.Clone) to keep it.
// Only keys with escapes allocate.
func (v Value) Members(fn func(key string, val Value) bool) {
	if v.Kind != Object {
		return
	}
	d := v.Raw
	for m, ok := firstMember(d); ok; m, ok = nextMember(d, m) {
		raw := d[m.keyStart:m.keyEnd]
		var key string
		switch {
		case m.escaped:
			b := appendDecoded(nil, raw)
			key = unsafe.String(unsafe.SliceData(b), len(b))
		case len(raw) > 0:
			key = unsafe.String(&raw[0], len(raw))
		}
		if !fn(key, valueAt(d, m.valStart, m.valEnd)) {
			return
		}
	}
}
