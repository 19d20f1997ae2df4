package jsonx

import (
	"math/rand/v2"
	"testing"
)

// Two loops have a twin in hand-written wasm (scanString, unescapeRun);
// their Go references (scanStringGo, unescapeRunGo) are what native builds
// run. These tests hold each twin to its reference on every start index of
// strings built to reach each stop. Natively each twin is its reference, so
// the comparison bites under `make test-wasm`, which runs them where the
// twins are the wasm ones.

// twinAtoms reach every stop of the two loops: plain runs around eight
// bytes long, every escape and its broken forms, surrogates, quotes,
// control bytes and bytes from 0x80 up.
var twinAtoms = []string{`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u00e9`, `\ud83d\ude00`, `\ud800`, `\udfff`,
	`\ud83d\u0041`, `\u003c`, `\u0000`, `\u07FF`, `\u0800`, `\uFFFF`, `\uaBcD`, `\ud55c`, "\xff", "é", "한", "a", "ab",
	"abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmnopq", " ", "{", `"`, `\q`, `\u12`, `\uZZZZ`, `\u`, "\x01", "\n",
	"\x1f", "\x7f", `\`}

// twinText is a random string literal's bytes, from its opening quote,
// closed or not, with or without JSON after it.
func twinText(rng *rand.Rand) []byte {
	b := []byte(`"`)
	for range rng.IntN(20) {
		b = append(b, twinAtoms[rng.IntN(len(twinAtoms))]...)
	}
	if rng.IntN(8) != 0 {
		b = append(b, '"')
	}
	if rng.IntN(2) == 0 {
		b = append(b, `,"after":1}`...)
	}
	return b
}

// requireTwinsAgree holds scanString and unescapeRun to their
// references on d from every index, unescapeRun into buffers of every room
// around what it needs.
func requireTwinsAgree(t *testing.T, d []byte) {
	t.Helper()
	want, got := make([]byte, 2*len(d)+32), make([]byte, 2*len(d)+32) // room for every n+room below
	for i := 0; i <= len(d); i++ {
		if i < len(d) && d[i] == '"' {
			e, esc, ok := scanStringGo(d, i)
			if ge, gesc, gok := scanString(d, i); ge != e || gesc != esc || gok != ok {
				t.Fatalf("scanString(%q, %d) = %d, %v, %v, its reference %d, %v, %v", d, i, ge, gesc, gok, e, esc, ok)
			}
		}
		for _, room := range []int{0, 1, 3, 4, 7, 8, 9, 16, len(d) - i, len(d) + 8} {
			room = max(room, 0)
			for _, n := range []int{0, 5} {
				wi, wn := unescapeRunGo(d, i, want[:n+room], n)
				gi, gn := unescapeRun(d, i, got[:n+room], n)
				if wi != gi || wn != gn || string(want[n:wn]) != string(got[n:gn]) {
					t.Fatalf("unescapeRun(%q, %d) into %d from %d = %d, %d, %q; its reference %d, %d, %q",
						d, i, n+room, n, gi, gn, got[n:gn], wi, wn, want[n:wn])
				}
			}
		}
	}
}

func TestTheWasmLoopsOfStringsStopAndDecodeAsTheirReferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 1000 {
		requireTwinsAgree(t, twinText(rng))
	}
}

func FuzzTheWasmLoopsOfStringsStopAndDecodeAsTheirReferences(f *testing.F) {
	rng := rand.New(rand.NewPCG(13, 14))
	for range 40 {
		f.Add(twinText(rng))
	}
	f.Add([]byte(`"abcdefgh\u00e9\ud83d\ude00\n\"x\" \ud800 a\/b"`))
	f.Fuzz(requireTwinsAgree)
}
