//go:build wasm

package estimate

// haveWordsFast says words runs its fast loop's turns as wordsFast.
const haveWordsFast = true

// wordsFast runs the turns of words' fast loop from the letter at s[i], u
// already charged, while the text has room for its loads, with the same
// charges: it returns where it stopped and u plus what it charged, and done
// when the run of words ends there (words returns), otherwise words' own
// loop goes on at next (a word of several pieces, a long word, the last
// bytes).
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
