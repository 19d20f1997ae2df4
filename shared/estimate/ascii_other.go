//go:build !wasm

package estimate

// haveASCIIRun is false off wasm: native code runs scan's Go loop alone.
const haveASCIIRun = false

// asciiRun is implemented for wasm only (see ascii_wasm.go).
func asciiRun(s []byte, i int, u int64, _ *asciiTables) (next int, charged int64) { return i, u }
