//go:build wasm

package jsonx

// plainEnd is PlainEnd's search, d[i] in d; plainend_other.go is the same
// in Go. In the VM it is hand-written wasm (plainend_wasm.s), for the
// reason scanString is (see scanstring_wasm.go).
//
//go:noescape
func plainEnd(d []byte, i int) int
