//go:build !wasm

package jsonx

// scanString is scanStringGo off wasm (scanstring_wasm.s in the VM).
func scanString(d []byte, i int) (end int, escaped, ok bool) { return scanStringGo(d, i) }
