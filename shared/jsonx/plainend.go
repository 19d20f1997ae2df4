package jsonx

// plainEndGo is PlainEnd's search, d[i] in d: the reference of plainEnd,
// which is this natively and plainend_wasm.s in the VM.
func plainEndGo(d []byte, i int) int {
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
