//go:build wasm

package estimate

// wordsFast is wordsFastGo, words' fast loop, with the same signature,
// stops and charges; the differential test and fuzz target of words_test.go
// hold it to wordsFastGo under `make test-wasm`.
//
// It is written in WebAssembly (words_wasm.s) for the reason asciiRun is
// (see ascii_wasm.go): this loop is where the estimator spends its time on
// prose, in a message's text read in place (walker.rawText), and Go's wasm
// backend compiles each of its branches to a jump through the function's
// dispatch loop. It reads wordPunct, so like words it passes only letters,
// digits, spaces and the punctuation a JSON string holds as it is.
//
//go:noescape
func wordsFast(s []byte, i int, u int64) (next int, charged int64, done bool)
