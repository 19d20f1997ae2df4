package jsonx

// scanStringGo is validString, also reporting whether the literal holds an
// escape: the reference of scanString, which is this natively and
// scanstring_wasm.s in the VM.
func scanStringGo(d []byte, i int) (end int, escaped, ok bool) {
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
			n := escapeLen(d, i)
			if n == 0 {
				return i, escaped, false
			}
			i += n
		default: // a control byte
			return i, escaped, false
		}
	}
}
