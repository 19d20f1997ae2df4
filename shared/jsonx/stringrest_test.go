package jsonx

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// requireRestDecodesAsEndThenUnescape holds AppendStringRest on d from i to
// StringEnd then AppendUnescaped with KeepInvalidUTF8: the same validity,
// the same end, and where valid the same decoding, into buffers with every
// room around what it needs.
func requireRestDecodesAsEndThenUnescape(t *testing.T, d []byte, i int) {
	t.Helper()
	end, _, ok := StringEnd(d, i)
	var want []byte
	if ok {
		want = AppendUnescaped([]byte("pre"), d[i:end-1], KeepInvalidUTF8)
	}
	for _, room := range []int{0, 1, 8, 15, 16, 17, len(d) - i, len(d) + 8} {
		got, gotEnd, gotOK := AppendStringRest(append(make([]byte, 0, 3+max(room, 0)), "pre"...), d, i)
		require.Equal(t, ok, gotOK, "%q from %d into room for %d", d, i, room)
		require.Equal(t, end, gotEnd, "%q from %d into room for %d: end", d, i, room)
		if ok {
			require.Equal(t, string(want), string(got), "%q from %d into room for %d", d, i, room)
		}
	}
}

// The rest of a string decodes as it validates: strings of escapes, runs
// of plain bytes around eight long, invalid bytes, and everything that
// makes a string invalid (a control byte, a bad escape, a short \u, no
// closing quote), read from every index at which the bytes before are
// plain, decode as StringEnd then AppendUnescaped decode them.
func TestTheRestOfAStringDecodesAsItIsValidated(t *testing.T) {
	atoms := []string{`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\udfff`, `\ud83d\u0041`,
		`\u003c`, `\u0000`, `\u07FF`, `\u0800`, `\uFFFF`, `\uaBcD`, `\ud55c`, "\xff", "é", "한",
		"a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmnopq", " ", "{",
		`\q`, `\u12`, `\uZZZZ`, "\x01", "\n", "\x1f", `\`}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 4000 {
		b := []byte(`"`)
		for range rng.IntN(16) {
			b = append(b, atoms[rng.IntN(len(atoms))]...)
		}
		if rng.IntN(8) != 0 {
			b = append(b, '"')
		}
		if rng.IntN(2) == 0 {
			b = append(b, `,"after":1}`...)
		}
		for i := 1; i <= len(b); i++ {
			requireRestDecodesAsEndThenUnescape(t, b, i)
			if c := b[i-1]; i > 1 && (c == '"' || c == '\\' || c < 0x20) {
				break // the bytes before the next index are not plain
			}
		}
	}
}

func FuzzAppendStringRest(f *testing.F) {
	for _, s := range []string{`"a\n"`, "\"\xff\\u00e9\"", `"\ud800\udc00\ud800"`, `"0123456789\\abcdef"`, `"x\u003cy"`, `"\q"`} {
		f.Add([]byte(s), 1)
	}
	f.Fuzz(func(t *testing.T, d []byte, i int) {
		if i < 1 || i > len(d) || len(d) == 0 || d[0] != '"' {
			return
		}
		for _, c := range d[1:i] {
			if c == '"' || c == '\\' || c < 0x20 {
				return
			}
		}
		requireRestDecodesAsEndThenUnescape(t, d, i)
	})
}

// PlainEnd finds the first quote, backslash or control byte from any index,
// whichever it is and wherever it lies, as a search byte by byte does.
func TestPlainEndFindsTheFirstByteAStringCannotHoldAsItIs(t *testing.T) {
	stops := []byte{'"', '\\', 0x00, 0x0a, 0x1f}
	plain := []byte{'a', ' ', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0xe4}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 3000 {
		d := make([]byte, rng.IntN(40))
		for k := range d {
			d[k] = plain[rng.IntN(len(plain))]
			if rng.IntN(12) == 0 {
				d[k] = stops[rng.IntN(len(stops))]
			}
		}
		for i := -1; i <= len(d)+1; i++ {
			want := max(i, len(d))
			for k := max(i, 0); k < len(d); k++ {
				if c := d[k]; c == '"' || c == '\\' || c < 0x20 {
					want = k
					break
				}
			}
			if i < 0 {
				want = len(d)
			}
			require.Equal(t, want, PlainEnd(d, i), "%q from %d", d, i)
		}
	}
}
