//go:build wasm

package jsonx

// unescapeRun is unescapeRunGo in hand-written wasm, held to it by
// twins_test.go. It decodes string content from c[i] into d[n]: while eight
// bytes fit in both, it copies them, keeps them up to the first quote,
// backslash or control byte (stringStops) and decodes an escape there;
// past that, it copies the last bytes one a turn. It decodes a one-letter
// escape, and a \u escape of a rune outside the surrogates into its one to
// three bytes of UTF-8. It returns where it stopped: where c ends or d has
// no room left, at a quote or a control byte (for AppendStringRest, the
// string's end or an error; validated content holds neither), or at a
// backslash its caller decodes itself: a surrogate (the half of a pair, or
// unpaired), an escape without its letter or its four hex digits in c, or
// one with fewer than four bytes of room in d. appendEscapesDecoded and
// AppendStringRest run their decoding here.
//
// The \u escapes are here because clients write them often: Go's
// encoding/json escapes <, > and & so in code, and Python's json module
// (ensure_ascii, its default) every character past ASCII, so a Korean
// prompt arrives as one escape per syllable. Each cost a return to Go and
// a call to decodeRune.
//
// In the VM it is hand-written wasm (unescape_wasm.s): Go's wasm backend
// compiles every taken branch to a jump back through the function's
// dispatch loop, and an escape took several; code and formatted text hold
// one every few bytes. Its loads and stores stay within c and d, each
// guarded by the length it needs; `make test-wasm` runs the package's
// tests, the differential ones against encoding/json included, through it.
//
//go:noescape
func unescapeRun(c []byte, i int, d []byte, n int) (ci, dn int)
