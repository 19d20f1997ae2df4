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
		return skipString(d, i)
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
// opening quote is at i. It hunts for '"' alone, eight bytes at a time, and
// only on a hit counts the backslashes before it (odd: escaped quote, go on).
// Looking for '\\' too would stop the word loop at every escape, which made
// skipping escape-heavy chat content three times slower.
func skipString(d []byte, i int) int {
	open := i
	i++
	for {
		for i+8 <= len(d) {
			if m := quoteStops(load64(d, i)); m != 0 {
				i += firstFlag(m)
				break
			}
			i += 8
		}
		for i < len(d) && d[i] != '"' {
			i++
		}
		if i >= len(d) {
			return len(d)
		}
		n := 0
		for j := i - 1; j > open && d[j] == '\\'; j-- {
			n++
		}
		i++
		if n&1 == 0 {
			return i
		}
	}
}

// skipContainer returns the index after the bracket closing the array or
// object that opens at i.
func skipContainer(d []byte, i int) int {
	depth := 0
	for {
		for i+8 <= len(d) {
			if m := containerStops(load64(d, i)); m != 0 {
				i += firstFlag(m)
				break
			}
			i += 8
		}
		if i >= len(d) {
			return len(d)
		}
		switch d[i] {
		case '"':
			i = skipString(d, i)
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
	end := skipString(d, i)
	if end <= i+1 || d[end-1] != '"' {
		return m, false
	}
	m.keyStart, m.keyEnd = i+1, end-1
	m.escaped = needsDecoding(d[m.keyStart:m.keyEnd])
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

// needsDecoding reports whether string content differs from its decoding:
// it holds an escape or invalid UTF-8 (which decodes to U+FFFD).
func needsDecoding(c []byte) bool {
	for i, b := range c {
		if b == '\\' {
			return true
		}
		if b >= utf8.RuneSelf {
			return !utf8.Valid(c[i:]) || hasBackslash(c[i:])
		}
	}
	return false
}

func hasBackslash(c []byte) bool {
	for _, b := range c {
		if b == '\\' {
			return true
		}
	}
	return false
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
