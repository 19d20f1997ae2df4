package estimate

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// Each charge has one reference in Go, which native builds run. Its twins
// are held to it here, in the native build and, by `make test-wasm`, in the
// wasm build, where the twins written in wasm replace the Go ones:
//   - asciiRun, scan's pieces after a letter (ascii_wasm.s in the VM), to
//     asciiRunGo;
//   - wordsFast, words' fast loop (words_wasm.s in the VM), to wordsFastGo;
//   - the shape readers plainMessage and plainPart, and messageAt's own fast
//     paths, to the Value walk of a message (message) and of a part (part).
//
// Natively asciiRun and wordsFast are their references, so those two
// comparisons bite only under `make test-wasm`; the shapes' bite in both.

// requireASCIIRunAsItsReference holds asciiRun to asciiRunGo from every
// letter of s, with u already charged.
func requireASCIIRunAsItsReference(t *testing.T, s []byte, u int64) {
	t.Helper()
	for i := range s {
		if byteClass[s[i]] > clsUpper {
			continue
		}
		wi, wu := asciiRunGo(s, i, u, &asciiTab)
		if gi, gu := asciiRun(s, i, u, &asciiTab); gi != wi || gu != wu {
			t.Fatalf("asciiRun(%q, %d, %d) = %d, %d; its reference %d, %d", s, i, u, gi, gu, wi, wu)
		}
	}
}

// requireWordsFastAsItsReference holds wordsFast to wordsFastGo from every
// letter of s, with u already charged.
func requireWordsFastAsItsReference(t *testing.T, s []byte, u int64) {
	t.Helper()
	for i := range s {
		if byteClass[s[i]] > clsUpper {
			continue
		}
		wi, wu, wd := wordsFastGo(s, i, u)
		if gi, gu, gd := wordsFast(s, i, u); gi != wi || gu != wu || gd != wd {
			t.Fatalf("wordsFast(%q, %d, %d) = %d, %d, %v; its reference %d, %d, %v", s, i, u, gi, gu, gd, wi, wu, wd)
		}
	}
}

// requireScanTwinsAsTheirReferences holds both of scan's wasm twins to
// their references on s.
func requireScanTwinsAsTheirReferences(t *testing.T, s []byte, u int64) {
	t.Helper()
	requireASCIIRunAsItsReference(t, s, u)
	requireWordsFastAsItsReference(t, s, u)
}

func TestScansWasmLoopsStopAndChargeAsTheirReferences(t *testing.T) {
	t.Parallel()
	for _, r := range buildCorpus(10) {
		requireScanTwinsAsTheirReferences(t, r.body, 0)
		for _, s := range r.texts {
			requireScanTwinsAsTheirReferences(t, []byte(s), 7)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		requireScanTwinsAsTheirReferences(t, randomText(rng, 40), rng.Int64N(1<<20))
	}
}

func FuzzScansWasmLoopsStopAndChargeAsTheirReferences(f *testing.F) {
	for _, s := range append(fuzzSeeds, "The quick brown fox jumps over the lazy dog, then sleeps. A long internationalization",
		"HTTPServer getURL x86_64 ... -> == qwxzvkjpq strengths rhythm abcdefghijklmnopqrstuvwxyz ab cd ef gh",
		"a  b\n\t\tc 123 x 12; y(); z := a[1] ++ -- ~^| 中文 é", "if (a) {\n    return b;\n}\n") {
		f.Add([]byte(s), int64(0))
	}
	f.Fuzz(func(t *testing.T, s []byte, u int64) {
		requireScanTwinsAsTheirReferences(t, s, u&(1<<40-1))
	})
}

const (
	messagePad = `,{"role":"user","content":"padding for the loads"}]`
	partPad    = `,{"type":"text","text":"padding for the loads"}]`
)

// The walk's readers of an item, fast paths first, and the Value walk they
// are held to: messagesAt's for a message (plainMessage, then messageAt,
// whose string contents, known roles and text parts have fast paths of
// their own) against message, and partsAt's for a part (plainPart) against
// part.
var (
	messageReaders = itemReaders{
		fast: func(w *walker, c *jsonx.StrictCursor) (took bool) {
			switch {
			case w.plainMessage(c):
				return true
			case c.EnterObject():
				w.messageAt(c)
			default:
				w.message(c.Value())
			}
			return false
		},
		value: func(w *walker, v jsonx.Value) { w.message(v) },
	}
	partReaders = itemReaders{
		fast: func(w *walker, c *jsonx.StrictCursor) bool {
			if w.plainPart(c) {
				return true
			}
			w.part(w.value(c))
			return false
		},
		value: func(w *walker, v jsonx.Value) { w.part(v) },
	}
)

type itemReaders struct {
	fast  func(*walker, *jsonx.StrictCursor) (shapeTook bool)
	value func(*walker, jsonx.Value)
}

// requireReadAsTheValueWalk holds r's fast readers to its Value walk on the
// first item of the array body: the same charge and the same bytes
// consumed, and the array read on after it. A body that is not valid JSON
// is not compared (Parse refuses it, whatever either charged). It
// reports whether a shape reader took the item.
func requireReadAsTheValueWalk(t *testing.T, body string, r itemReaders) (shapeTook bool) {
	t.Helper()
	first := func() (jsonx.StrictCursor, bool) {
		c := jsonx.Strict([]byte(body))
		return c, c.Enter(jsonx.Array) && c.Next()
	}
	c, ok := first()
	c2, _ := first()
	if !ok {
		return false
	}
	if !jsonx.Valid([]byte(body)) {
		return false
	}
	v := c2.Value()
	w, w2 := walker{body: []byte(body)}, walker{body: []byte(body)}
	shapeTook = r.fast(&w, &c)
	r.value(&w2, v)
	if c.Offset() != c2.Offset() || w.total != w2.total || w.o200k != w2.o200k || w.images != w2.images {
		t.Fatalf("%s: the walk consumed to %d and charged %d/%d/%d; the Value walk %d and %d/%d/%d", body,
			c.Offset(), w.total, w.o200k, w.images, c2.Offset(), w2.total, w2.o200k, w2.images)
	}
	for c.Next() {
		c.Skip()
	}
	if !c.Valid() {
		t.Fatalf("%s: the array does not read on after the item", body)
	}
	return shapeTook
}

// requireShapesReadAsTheWalkReads holds the readers of messages and of
// parts to the Value walk on item, the first of an array with one item
// more. It reports which shapes took the item (bit 0 plainMessage, bit 1
// plainPart).
func requireShapesReadAsTheWalkReads(t *testing.T, item string) (took int) {
	t.Helper()
	if requireReadAsTheValueWalk(t, "["+item+messagePad, messageReaders) {
		took |= 1
	}
	if requireReadAsTheValueWalk(t, "["+item+partPad, partReaders) {
		took |= 2
	}
	return took
}

// randomItem is a message or a part as randomBody builds them, written as
// clients write them (compact, in either member order) or spelled another
// way.
func randomItem(rng *rand.Rand) string {
	text := string(randomText(rng, 12))
	var v any
	switch rng.IntN(4) {
	case 0:
		v = map[string]any{"role": []string{"user", "system", "assistant", "tool", "developer", "User"}[rng.IntN(6)], "content": text}
	case 1:
		v = map[string]any{"type": []string{"text", "input_text"}[rng.IntN(2)], "text": text}
	case 2:
		v = map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}
	default:
		v = map[string]any{"type": "text", "text": text, "cache_control": map[string]any{"type": "ephemeral"}}
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	s := string(b)
	if rng.IntN(2) == 0 {
		// encoding/json writes members sorted; clients also write them the
		// other way round.
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		s = "{"
		keys := []string{}
		for k := range m {
			keys = append([]string{k}, keys...)
		}
		for i, k := range keys {
			if i > 0 {
				s += ","
			}
			s += `"` + k + `":` + string(m[k])
		}
		s += "}"
	}
	return s
}

func TestTheShapeReadersReadAsTheWalkReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var took [4]int
	for range 3000 {
		took[requireShapesReadAsTheWalkReads(t, randomItem(rng))]++
	}
	// Without this a shape that refused every item would pass.
	if took[1] < 100 || took[2] < 100 {
		t.Fatalf("of 3000 items plainMessage took %d, plainPart %d", took[1], took[2])
	}
}

func FuzzTheShapeReadersReadAsTheWalkReads(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 20 {
		f.Add(randomItem(rng))
	}
	for _, s := range []string{`{"role":"user","content":"hi"}`, `{"content":"a\u003cb","role":"assistant"}`,
		`{"text":"hi","type":"text"}`, `{"type":"text","text":"\ud55c"}`, `{"role":"user","content":"hi"`, `"s"`, `1`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, item string) { requireShapesReadAsTheWalkReads(t, item) })
}

// diffAtoms are the pieces random texts are built from: every byte class,
// the boundaries between them (case changes, digits inside words, runs of
// repeats, common punctuation pairs, whitespace mixes), every UTF-8 length,
// the typographic range that costs less, and broken sequences.
var diffAtoms = []string{
	"a", "e", "y", "q", "x", "Z", "A", "E", "k", "the", "quick", "Elephants", "HTTPServer", "getURL", "qwxzvkjpq",
	"QWXZVKJPQ", "strengths", "rhythm", "abcdefghijkl", "ID", "Ab", "aB", "0", "7", "12", "123", "1234", "99999",
	"a1", "v2", "9a5f", "x86_64", " ", "  ", "\t", "\n", "\r\n", "\v", "\f", "    ", "\n\n", " \t", "(", ")", "{",
	"}", "[", "]", ";", ",", ":", "\"", "'", "=", "==", "!", "-", "--", "->", "/", "*", "_", ".", "...", "~", "^",
	"|", "`", "$", "#", "@", "%", "&", "+", "<", ">", "?", "\\", "\x00", "\x1f", "\x7f", "é", "ß", "Ж", "א", "ع",
	"中", "文", "한", "カ", "—", "–", "“", "”", "…", "•", "‐", "‧", "‰", "\u2028", "😀", "🚀", "𝔘",
	"\x80", "\xbf", "\xc0", "\xc1", "\xc2", "\xdf", "\xe0", "\xe2\x80", "\xed\xa0\x80", "\xef", "\xf0\x9f", "\xf4",
	"\xf5", "\xff", "\xf0\x9f\x98", "\xe4\xb8",
}

// randomText joins up to max atoms; some texts repeat one atom to make the
// long runs the per-run charges treat specially.
func randomText(rng *rand.Rand, max int) []byte {
	var b []byte
	n := rng.IntN(max + 1)
	for range n {
		a := diffAtoms[rng.IntN(len(diffAtoms))]
		if rng.IntN(8) == 0 {
			a = string(bytes.Repeat([]byte(a), 1+rng.IntN(40)))
		}
		b = append(b, a...)
	}
	return b
}
