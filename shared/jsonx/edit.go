package jsonx

import "unicode/utf8"

// SetMember returns a copy of the object obj with the first member named key
// set to raw: its value is replaced in place, or, if absent, the member is
// appended after the last member (or right after '{' when empty). Every other
// byte — whitespace, key order, number spelling — is kept, so the upstream sees
// the client's body with exactly one change. False when obj is not a valid
// JSON object or raw is not a valid JSON value. obj is never modified.
func SetMember(obj []byte, key string, raw []byte) ([]byte, bool) {
	return SetPath(obj, []string{key}, raw)
}

// SetPath is SetMember through nested objects (e.g. stream_options,
// include_usage): missing intermediate objects are created; an intermediate
// that exists but is not an object gives false rather than clobbering data.
// An empty path gives false. A result that would nest deeper than MaxDepth also
// gives false, so that the output always parses again.
func SetPath(doc []byte, path []string, raw []byte) ([]byte, bool) {
	if len(path) == 0 {
		return nil, false
	}
	base := skipWS(doc, 0)
	end, _, ok := validate(doc, base)
	if !ok || skipWS(doc, end) != len(doc) || doc[base] != '{' {
		return nil, false
	}
	rs := skipWS(raw, 0)
	rend, rawDepth, ok := validate(raw, rs)
	if !ok || skipWS(raw, rend) != len(raw) {
		return nil, false
	}
	raw = raw[rs:rend]
	cur := doc[base:end]
	for level, key := range path {
		m, found := findMember(cur, key)
		if found {
			if level == len(path)-1 {
				// raw sits inside level+1 objects.
				if level+1+rawDepth > MaxDepth {
					return nil, false
				}
				return splice(doc, base+m.valStart, base+m.valEnd, raw), true
			}
			if cur[m.valStart] != '{' {
				return nil, false
			}
			base += m.valStart
			cur = cur[m.valStart:m.valEnd]
			continue
		}
		// Insert `"key":{"next":{...raw...}}` into cur.
		rest := path[level:]
		if level+len(rest)+rawDepth > MaxDepth {
			return nil, false
		}
		at, empty := insertionPoint(cur)
		ins := make([]byte, 0, len(raw)+16*len(rest))
		if !empty {
			ins = append(ins, ',')
		}
		for k, name := range rest {
			if k > 0 {
				ins = append(ins, '{')
			}
			ins = AppendString(ins, name)
			ins = append(ins, ':')
		}
		ins = append(ins, raw...)
		for k := 1; k < len(rest); k++ {
			ins = append(ins, '}')
		}
		return splice(doc, base+at, base+at, ins), true
	}
	return nil, false
}

// findMember returns the first member of object d named key.
func findMember(d []byte, key string) (member, bool) {
	plain := utf8.ValidString(key)
	for m, ok := firstMember(d); ok; m, ok = nextMember(d, m) {
		if keyEquals(d[m.keyStart:m.keyEnd], m.escaped, key, plain) {
			return m, true
		}
	}
	return member{}, false
}

// insertionPoint is where a new member goes in object d: after the last
// member's value, or right after '{' when the object is empty.
func insertionPoint(d []byte) (at int, empty bool) {
	at, empty = 1, true
	for m, ok := firstMember(d); ok; m, ok = nextMember(d, m) {
		at, empty = m.valEnd, false
	}
	return at, empty
}

// splice returns a new slice: d[:s] + ins + d[e:].
func splice(d []byte, s, e int, ins []byte) []byte {
	out := make([]byte, 0, len(d)-(e-s)+len(ins))
	out = append(out, d[:s]...)
	out = append(out, ins...)
	return append(out, d[e:]...)
}
