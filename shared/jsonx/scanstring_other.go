//go:build !wasm

package jsonx

// scanString is validString, also reporting whether the literal holds an
// escape.
func scanString(d []byte, i int) (end int, escaped, ok bool) {
	i++
	for {
		// The plain bytes, eight a turn, up to the next stop.
		if i = plainEnd(d, i); i >= len(d) {
			return i, escaped, false
		}
		c := d[i]
		switch {
		case c == '"':
			return i + 1, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(d) {
				return i, escaped, false
			}
			// The one-letter escapes from the decoder's table: one load
			// where a switch over their eight letters cost the VM a chain
			// of tests, a pass through its dispatch each.
			if shortEscapes[d[i+1]] != 0 {
				i += 2
				continue
			}
			if d[i+1] != 'u' {
				return i, escaped, false
			}
			if _, ok := hex4(d, i+2); !ok {
				return i, escaped, false
			}
			i += 6
		default: // a control byte
			return i, escaped, false
		}
	}
}
