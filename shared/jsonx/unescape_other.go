//go:build !wasm

package jsonx

import (
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// haveUnescapeRun is false off wasm: appendEscapesDecoded's own Go loop,
// which the native compiler keeps in registers, runs alone.
const haveUnescapeRun = false

// unescapeRun is unescape_wasm.s in Go (see unescape_wasm.go): what
// AppendStringRest runs natively, each build's tests holding its own
// unescapeRun to the same decodings.
func unescapeRun(c []byte, i int, d []byte, n int) (ci, dn int) {
	for i < len(c) {
		var b byte
		if i+8 <= len(c) && n+8 <= len(d) {
			x := loadLE64(c, i)
			storeLE64(d, n, x)
			m := stringStops(x)
			if m == 0 {
				i, n = i+8, n+8
				continue
			}
			k := bits.TrailingZeros64(m) >> 3
			i, n = i+k, n+k
			b = c[i]
		} else {
			if n >= len(d) {
				break
			}
			if b = c[i]; b != '\\' && b != '"' && b >= 0x20 {
				d[n] = b
				i, n = i+1, n+1
				continue
			}
		}
		if b != '\\' || i+1 >= len(c) || n+utf8.UTFMax > len(d) {
			break
		}
		if e := shortEscapes[c[i+1]]; e != 0 {
			d[n] = e
			i, n = i+2, n+1
			continue
		}
		if c[i+1] != 'u' {
			break
		}
		r, ok := hex4(c, i+2)
		if !ok || utf16.IsSurrogate(r) {
			break
		}
		n += utf8.EncodeRune(d[n:], r)
		i += 6
	}
	return i, n
}
