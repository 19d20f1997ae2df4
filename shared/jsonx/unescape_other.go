//go:build !wasm

package jsonx

// unescapeRun is unescapeRunGo off wasm (unescape_wasm.s in the VM).
func unescapeRun(c []byte, i int, d []byte, n int) (ci, dn int) { return unescapeRunGo(c, i, d, n) }
