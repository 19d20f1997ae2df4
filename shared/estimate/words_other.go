//go:build !wasm

package estimate

// haveWordsFast is false off wasm: words runs its fast loop in Go.
const haveWordsFast = false

// wordsFast is implemented for wasm only (see words_wasm.go).
func wordsFast(s []byte, i int, u int64) (next int, charged int64, done bool) { return i, u, false }
