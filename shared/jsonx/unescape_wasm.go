//go:build wasm

package jsonx

// haveUnescapeRun says appendEscapesDecoded hands its fast loop to
// unescapeRun first.
const haveUnescapeRun = true

// unescapeRun is turns of appendEscapesDecoded's fast loop from c[i] and
// d[n]: while eight bytes fit in both, it copies them, keeps them up to
// the first backslash and decodes a one-letter escape there. It returns
// where it stopped: at a backslash the loop decodes itself (\u, or one
// too close to either end) or where eight bytes no longer fit.
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
