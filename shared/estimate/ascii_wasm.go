//go:build wasm

package estimate

// haveASCIIRun says scan hands a letter to asciiRun before words.
const haveASCIIRun = true

// asciiRun charges the ASCII pieces of s from s[i] as scan does, with u
// already charged, and returns where it stopped and u plus what it charged.
// It stops at the first piece it leaves to scan, which charges it: a word
// followed by a capital or a digit (a run of several pieces, which words
// charges as one), three or more punctuation characters, whitespace
// before a byte from 0xE0 up, a byte from 0x80 up, or a piece that starts
// fewer than three bytes before the end. Each piece it charges is charged
// alone, as scan charges it, so where it stops scan stands at a turn.
//
// It is written in WebAssembly (ascii_wasm.s) because Go's wasm backend
// compiles every taken branch to a jump back through the function's
// dispatch loop, an indirect jump in the VM's code, and code, whose pieces
// are a byte or two, takes one at every piece: in the VM, scan's Go loop
// ran 138 instructions a byte of code against 28 a byte of prose. The
// structured loops of hand-written wasm compile to direct jumps. Its loads
// stay within s: each is guarded by the length it needs. `make test-wasm`
// runs the package's tests under wasip1, so the differential tests against
// the pre-rewrite estimator run through it.
//
//go:noescape
func asciiRun(s []byte, i int, u int64, t *asciiTables) (next int, charged int64)
