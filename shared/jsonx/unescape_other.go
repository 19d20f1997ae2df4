//go:build !wasm

package jsonx

// haveUnescapeRun is false off wasm: appendEscapesDecoded's Go loop runs
// alone.
const haveUnescapeRun = false

// unescapeRun is implemented for wasm only (see unescape_wasm.go).
func unescapeRun(c []byte, i int, d []byte, n int) (ci, dn int) { return i, n }
