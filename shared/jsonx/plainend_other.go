//go:build !wasm

package jsonx

// plainEnd is plainEndGo off wasm (plainend_wasm.s in the VM).
func plainEnd(d []byte, i int) int { return plainEndGo(d, i) }
