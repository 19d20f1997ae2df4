//go:build wasm

package jsonx

// plainEnd is plainEndGo, PlainEnd's search, in hand-written wasm
// (plainend_wasm.s) for the reason scanString is (see scanstring_wasm.go);
// twins_test.go holds it to plainEndGo.
//
//go:noescape
func plainEnd(d []byte, i int) int
