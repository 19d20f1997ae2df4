//go:build !wasm

package estimate

// asciiRun is asciiRunGo off wasm (ascii_wasm.s in the VM).
func asciiRun(s []byte, i int, u int64, t *asciiTables) (next int, charged int64) {
	return asciiRunGo(s, i, u, t)
}
