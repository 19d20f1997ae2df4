//go:build wasm

package jsonx

// scanString is validString, also reporting whether the literal holds an
// escape: scanStringGo in hand-written wasm, held to it by twins_test.go.
//
// In the VM it is hand-written wasm (scanstring_wasm.s): Go's wasm backend
// compiles every taken branch to a jump back through the function's
// dispatch loop, and in code and formatted text, where an escape comes
// every few bytes, each escape took several. The structured loops of
// hand-written wasm compile to direct jumps. Its loads stay within d, each
// guarded by the length it needs; `make test-wasm` runs the package's
// tests, the differential ones against encoding/json included, through it.
//
//go:noescape
func scanString(d []byte, i int) (end int, escaped, ok bool)
