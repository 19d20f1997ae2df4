//go:build wasm

package estimate

// asciiRun is asciiRunGo (ascii.go), with the same stops and charges; the
// differential test and fuzz target of twins_test.go hold it to asciiRunGo
// under `make test-wasm`.
//
// It is written in WebAssembly (ascii_wasm.s) because Go's wasm backend
// compiles every taken branch to a jump back through the function's
// dispatch loop, an indirect jump in the VM's code, and code, whose pieces
// are a byte or two, takes one at every piece: in the VM, scan's Go loop
// ran 138 instructions a byte of code against 28 a byte of prose. The
// structured loops of hand-written wasm compile to direct jumps. Its loads
// stay within s: each is guarded by the length it needs.
//
//go:noescape
func asciiRun(s []byte, i int, u int64, t *asciiTables) (next int, charged int64)
