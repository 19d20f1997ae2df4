package jsonx

// plainEnd is PlainEnd's search, d[i] in d. (A twin in hand-written wasm
// saved nothing measurable in the VM and was removed: DECISIONS, "One
// reference per charge".)
func plainEnd(d []byte, i int) int {
	for i+8 <= len(d) {
		if m := stringStops(load64(d, i)); m != 0 {
			i += firstFlag(m) // exact, or 0 where the bytes below find it
			break
		}
		i += 8
	}
	for i < len(d) && d[i] != '"' && d[i] != '\\' && d[i] >= 0x20 {
		i++
	}
	return i
}
