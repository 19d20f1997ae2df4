package jsonx

// The validator is the only place that checks JSON grammar. It runs once per
// document (Parse, Valid, the edit functions) and is iterative: nesting is a
// counter plus a MaxDepth-bit stack on the Go stack, so hostile input can
// neither recurse nor allocate.

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(d []byte, i int) int {
	for i < len(d) {
		switch d[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// validate checks the value starting exactly at i and returns its end, the
// deepest nesting it reached (0 for scalars) and whether it is valid.
//
// It first runs with a stack of 64 levels, which every real document fits,
// and only a value nested deeper is checked again from i with the MaxDepth
// stack: a stack array is zeroed on every call, and in the VM zeroing the
// 1,256 bytes of the MaxDepth stack is a memory.fill that a compiler may
// turn into a dozen calls into the host.
func validate(d []byte, i int) (end int, maxDepth int, ok bool) {
	var shallow [1]uint64
	end, maxDepth, ok = validateIn(d, i, shallow[:])
	if maxDepth > 64*len(shallow) {
		return validateDeep(d, i)
	}
	return end, maxDepth, ok
}

// validateDeep is validate with the MaxDepth stack.
func validateDeep(d []byte, i int) (end int, maxDepth int, ok bool) {
	var stack [(MaxDepth + 63) / 64]uint64
	return validateIn(d, i, stack[:])
}

// validateIn is validate with stack for the nesting (bit set: that level is
// an object). A value nested deeper than stack holds ends the check with
// maxDepth one past what it holds, so validate knows to check it again with
// the MaxDepth stack.
func validateIn(d []byte, i int, stack []uint64) (end int, maxDepth int, ok bool) {
	depth := 0
	for {
		i = skipWS(d, i)
		if i >= len(d) {
			return i, maxDepth, false
		}
		switch c := d[i]; c {
		case '{', '[':
			if depth == MaxDepth {
				return i, maxDepth, false
			}
			if depth == 64*len(stack) {
				return i, depth + 1, false
			}
			close := byte(']')
			if c == '{' {
				stack[depth>>6] |= 1 << (depth & 63)
				close = '}'
			} else {
				stack[depth>>6] &^= 1 << (depth & 63)
			}
			depth++
			if depth > maxDepth {
				maxDepth = depth
			}
			i = skipWS(d, i+1)
			if i < len(d) && d[i] == close {
				i++
				depth--
				break // an empty container is a complete value
			}
			if c == '{' {
				if e := shortString(d, i); e > 0 && d[i] == '"' && e < len(d) && d[e] == ':' {
					i = e + 1
				} else if i, ok = validKey(d, i); !ok {
					return i, maxDepth, false
				}
			}
			continue // expect the first element or member value
		case '"':
			if e := shortString(d, i); e > 0 {
				i = e
			} else if i, ok = validString(d, i); !ok {
				return i, maxDepth, false
			}
		case 't':
			if !hasLiteral(d, i, "true") {
				return i, maxDepth, false
			}
			i += 4
		case 'f':
			if !hasLiteral(d, i, "false") {
				return i, maxDepth, false
			}
			i += 5
		case 'n':
			if !hasLiteral(d, i, "null") {
				return i, maxDepth, false
			}
			i += 4
		default:
			if e := shortInteger(d, i); e > 0 {
				i = e
			} else if i, ok = validNumber(d, i); !ok {
				return i, maxDepth, false
			}
		}
		// A value just ended: close containers until one continues.
		for {
			if depth == 0 {
				return i, maxDepth, true
			}
			i = skipWS(d, i)
			if i >= len(d) {
				return i, maxDepth, false
			}
			top := depth - 1
			inObject := stack[top>>6]&(1<<(top&63)) != 0
			c := d[i]
			if c == ',' {
				i++
				if inObject {
					// A short key right before its colon, in line: what
					// compact JSON holds; anything else goes to validKey.
					if e := shortString(d, i); e > 0 && d[i] == '"' && e < len(d) && d[e] == ':' {
						i = e + 1
					} else if i, ok = validKey(d, skipWS(d, i)); !ok {
						return i, maxDepth, false
					}
				}
				break
			}
			if (inObject && c == '}') || (!inObject && c == ']') {
				i++
				depth--
				continue
			}
			return i, maxDepth, false
		}
	}
}

// validKey checks `"key" :` at i and returns the index after the colon.
func validKey(d []byte, i int) (int, bool) {
	if i >= len(d) || d[i] != '"' {
		return i, false
	}
	if e := shortString(d, i); e > 0 {
		i = e
	} else if e, ok := validString(d, i); ok {
		i = e
	} else {
		return e, false
	}
	i = skipWS(d, i)
	if i >= len(d) || d[i] != ':' {
		return i, false
	}
	return i + 1, true
}

func hasLiteral(d []byte, i int, lit string) bool {
	return len(d)-i >= len(lit) && string(d[i:i+len(lit)]) == lit
}

// validString checks the string literal whose opening quote is at i and
// returns the index after its closing quote. Like encoding/json it accepts
// invalid UTF-8 (decoding replaces it with U+FFFD) but not control bytes.
func validString(d []byte, i int) (int, bool) {
	end, _, ok := scanString(d, i)
	return end, ok
}

// StringEnd reads the string literal whose opening quote comes before
// checked in d, for a caller that has read its first bytes itself and found
// them plain: from the quote up to checked they hold no quote, no backslash
// and no control byte, so the check starts at checked (the estimator reads
// a message's text as it validates it). It returns the index after the
// closing quote and whether the literal holds an escape; ok is false when
// the literal is not a valid string (end is then where it fails) or when
// checked is outside d or at its start. StrictCursor.StringAfter is the same
// for a walk.
func StringEnd(d []byte, checked int) (end int, escaped, ok bool) {
	if checked < 1 || checked > len(d) {
		return checked, false, false
	}
	// scanString starts at the byte after the index it is given.
	return scanString(d, checked-1)
}

// shortString is the end of the string literal whose opening quote is at i
// (the index after its closing quote) when the literal closes within the
// nine bytes after its opening quote with no escape or control byte before
// that, and 0 otherwise, when scanString must read it. Most member names and
// many values are that short, and it is small enough to be put in line,
// where in the VM the call to scanString costs more than reading them. The
// first byte stringStops flags is exact (a flag after it may not be); with
// no flag among the eight bytes, firstFlag is 8 and the ninth is tested.
func shortString(d []byte, i int) int {
	if i+10 > len(d) {
		return 0
	}
	j := i + 1 + firstFlag(stringStops(load64(d, i+1)))
	if d[j] != '"' {
		return 0
	}
	return j + 1
}

// escapeLen is the length of the escape whose backslash is at d[i]: 2 for
// one of the one-letter escapes, 6 for \u and four hex digits, 0 where d
// holds no valid escape there. The one-letter escapes come from the
// decoder's table: one load, where a switch over their eight letters cost
// the VM a chain of tests.
func escapeLen(d []byte, i int) int {
	switch {
	case i+1 >= len(d):
		return 0
	case shortEscapes[d[i+1]] != 0:
		return 2
	case d[i+1] != 'u':
		return 0
	}
	if _, ok := hex4(d, i+2); !ok {
		return 0
	}
	return 6
}

// hex4 decodes the four hex digits at d[i:i+4].
func hex4(d []byte, i int) (rune, bool) {
	if i < 0 || len(d)-i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range d[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// NumberEnd is the end of the JSON number at d[i:], by the grammar the
// validator checks; ok is false where no number starts there. What follows
// the number is the caller's to check (07 ends after its 0).
func NumberEnd(d []byte, i int) (end int, ok bool) { return validNumber(d, i) }

// validNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i and
// returns its end; what may follow is the caller's business.
func validNumber(d []byte, i int) (int, bool) {
	if i < len(d) && d[i] == '-' {
		i++
	}
	if i >= len(d) {
		return i, false
	}
	switch c := d[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		i = skipDigits(d, i+1)
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		j := skipDigits(d, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := skipDigits(d, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func skipDigits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// isNumber reports whether s is exactly one JSON number, so that Float and Int
// never hand strconv spellings JSON does not allow ("inf", "0x10", "1_0").
func isNumber(s []byte) bool {
	end, ok := validNumber(s, 0)
	return ok && end == len(s)
}

// IsNumber reports whether s is exactly one JSON number token (no sign but
// a leading minus, no leading zeros, digits on both sides of a point).
func IsNumber(s []byte) bool { return isNumber(s) }

// shortInteger is the end of the integer at i when it is a plain one (no
// sign, fraction or exponent, no leading zero) of at most seven digits
// followed by a byte that is none of those, and 0 otherwise, when
// validNumber must read it. It is small enough to be put in line: in the VM
// the call to validNumber costs more than reading a short number.
func shortInteger(d []byte, i int) int {
	if i+8 > len(d) {
		return 0
	}
	x := load64(d, i)
	h := x &^ msb
	digits := (h + lsb*(0x80-'0')) &^ (h + lsb*(0x80-'9'-1)) &^ x & msb
	n := firstFlag(^digits & msb)
	if n == 0 || n == 8 || (n > 1 && byte(x) == '0') {
		return 0
	}
	if c := d[i+n]; c == '.' || c == 'e' || c == 'E' {
		return 0
	}
	return i + n
}
