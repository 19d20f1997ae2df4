package jsonx

import "unicode/utf8"

// Trusting scanners: they assume bytes already passed validate and only find
// where things end. On bytes that did not, they still always advance and stay
// in bounds, so a hand-built Value cannot hang or panic the filter.

// skipValue returns the end of the value starting at i.
func skipValue(d []byte, i int) int {
	if i >= len(d) {
		return len(d)
	}
	switch d[i] {
	case '"':
		end, _ := skipString(d, i)
		return end
	case '{', '[':
		return skipContainer(d, i)
	}
	for i < len(d) {
		switch d[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// skipString returns the index after the closing quote of the string whose
// opening quote is at i, and whether the string contains escapes.
func skipString(d []byte, i int) (end int, escaped bool) {
	i++
	for {
		for i+8 <= len(d) && plainSkipWord(load64(d, i)) {
			i += 8
		}
		if i >= len(d) {
			return len(d), escaped
		}
		switch d[i] {
		case '"':
			return i + 1, escaped
		case '\\':
			escaped = true
			i += 2
		default:
			i++
		}
	}
}

// skipContainer returns the index after the bracket closing the array or
// object that opens at i.
func skipContainer(d []byte, i int) int {
	depth := 0
	for {
		for i+8 <= len(d) && plainContainerWord(load64(d, i)) {
			i += 8
		}
		if i >= len(d) {
			return len(d)
		}
		switch d[i] {
		case '"':
			i, _ = skipString(d, i)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth <= 0 {
				return i + 1
			}
		}
		i++
	}
}

// member is one object member located by nextMember; offsets index the
// object's Raw. Keys are the bytes between the quotes.
type member struct {
	keyStart, keyEnd int
	escaped          bool // key needs decoding (escapes or invalid UTF-8)
	valStart, valEnd int
}

// firstMember positions at the first member of the object d; ok is false for
// an empty (or malformed) object.
func firstMember(d []byte) (m member, ok bool) {
	if len(d) == 0 || d[0] != '{' {
		return m, false
	}
	return readMember(d, skipWS(d, 1))
}

// nextMember moves past m to the following member, if any.
func nextMember(d []byte, m member) (member, bool) {
	i := skipWS(d, m.valEnd)
	if i >= len(d) || d[i] != ',' {
		return member{}, false
	}
	return readMember(d, skipWS(d, i+1))
}

func readMember(d []byte, i int) (m member, ok bool) {
	if i >= len(d) || d[i] != '"' {
		return m, false
	}
	end, esc := skipString(d, i)
	if end <= i+1 || end > len(d) || d[end-1] != '"' {
		return m, false
	}
	// "escaped" means "needs decoding": invalid UTF-8 decodes to U+FFFD.
	m.keyStart, m.keyEnd = i+1, end-1
	m.escaped = esc || !utf8.Valid(d[m.keyStart:m.keyEnd])
	i = skipWS(d, end)
	if i >= len(d) || d[i] != ':' {
		return m, false
	}
	i = skipWS(d, i+1)
	m.valStart = i
	m.valEnd = skipValue(d, i)
	if m.valEnd <= m.valStart {
		return m, false
	}
	return m, true
}

// keyEquals compares a raw key (between the quotes) with key after decoding
// both the encoding/json way, without allocating. plainKey is
// utf8.ValidString(key), computed once per lookup: a key with invalid UTF-8
// stands for the U+FFFD that AppendString would write, so SetMember finds the
// member it wrote earlier instead of appending a duplicate.
func keyEquals(raw []byte, escaped bool, key string, plainKey bool) bool {
	if !escaped && plainKey {
		return string(raw) == key
	}
	k := 0
	for i := 0; i < len(raw); {
		r, n := decodeRune(raw, i)
		i += n
		if k >= len(key) {
			return false
		}
		kr, kn := utf8.DecodeRuneInString(key[k:])
		if kr != r {
			return false
		}
		k += kn
	}
	return k == len(key)
}

// element returns the value at i inside an array, or ok false when i does
// not start an element.
func element(d []byte, i int) (start, end int, ok bool) {
	end = skipValue(d, i)
	return i, end, end > i
}

// firstElement positions at the first element of the array d.
func firstElement(d []byte) (start, end int, ok bool) {
	if len(d) == 0 || d[0] != '[' {
		return 0, 0, false
	}
	i := skipWS(d, 1)
	if i >= len(d) || d[i] == ']' {
		return 0, 0, false
	}
	return element(d, i)
}

// nextElement moves past the element ending at end.
func nextElement(d []byte, end int) (int, int, bool) {
	i := skipWS(d, end)
	if i >= len(d) || d[i] != ',' {
		return 0, 0, false
	}
	return element(d, skipWS(d, i+1))
}

// valueAt wraps d[start:end] as a Value.
func valueAt(d []byte, start, end int) Value {
	if start < 0 || end > len(d) || start >= end {
		return Value{}
	}
	k := kindOf(d[start])
	if k == Invalid {
		return Value{}
	}
	return Value{Kind: k, Raw: d[start:end:end]}
}
