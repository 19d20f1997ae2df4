package jsonx

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// unescapeRunGo is unescapeRun in Go (see unescape_wasm.go), its reference:
// what appendEscapesDecoded and AppendStringRest run natively.
func unescapeRunGo(c []byte, i int, d []byte, n int) (ci, dn int) {
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

// loadLE64 reads b[i:i+8] and storeLE64 writes x there, little-endian,
// without the slice expression and bounds check of binary.LittleEndian on
// b[i:]: callers have checked i+8 <= len(b).
func loadLE64(b []byte, i int) uint64 {
	return binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), i))[:])
}

func storeLE64(b []byte, i int, x uint64) {
	binary.LittleEndian.PutUint64((*[8]byte)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b)), i))[:], x)
}
