package estimate

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
)

// The estimator was rewritten for speed inside the wasm VM, not to change a
// single estimate: a different figure would move every tenant's reservation
// and the accuracy figures the bounds were tuned on. These tests hold Text
// and Parse to the pre-change code kept in prechange_test.go.

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

func requireTextMatchesReference(t testing.TB, s []byte) {
	t.Helper()
	want := preText(s)
	if got := Text(s); got != want {
		t.Fatalf("Text(%q) = %d, before the change %d", s, got, want)
	}
	if got := TextString(string(s)); got != want {
		t.Fatalf("TextString(%q) = %d, before the change %d", s, got, want)
	}
}

func requireParseMatchesReference(t testing.TB, body []byte) {
	t.Helper()
	want, wantErr := preParse(body, 4096)
	// The reference predates image counting (TestParseCountsImagePartsOfEveryAPI
	// pins it) and the estimate for o200k_base models alone
	// (TestAnO200kModelIsEstimatedForItsEncodingAlone); every other field
	// must match.
	got, _, _, err := parseCounts(body, 4096)
	got.Images = 0
	if err != wantErr || got != want {
		t.Fatalf("Parse(%q) = %+v, %v; before the change %+v, %v", body, got, err, want, wantErr)
	}
}

func TestTextChargesWhatItChargedBeforeTheSpeedRewrite(t *testing.T) {
	for _, r := range buildCorpus(40) {
		requireTextMatchesReference(t, r.body)
		for _, s := range r.texts {
			requireTextMatchesReference(t, []byte(s))
		}
	}
	for _, s := range fuzzSeeds {
		requireTextMatchesReference(t, []byte(s))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := randomText(rng, 40)
		requireTextMatchesReference(t, s)
		// Every suffix too: a text may start anywhere in a run.
		for i := 1; i < len(s) && i < 12; i++ {
			requireTextMatchesReference(t, s[i:])
		}
	}
}

// randomBody is a request of every shape the walk knows, filled with random
// texts, so escapes (including \u surrogates) and odd types reach the walk.
func randomBody(rng *rand.Rand) []byte {
	text := func() any {
		switch rng.IntN(6) {
		case 0:
			return rng.IntN(100000)
		case 1:
			return nil
		case 2:
			return []any{map[string]any{"type": "text", "text": string(randomText(rng, 20))}}
		}
		return string(randomText(rng, 30))
	}
	msgs := []any{}
	for range rng.IntN(5) {
		m := map[string]any{"role": []string{"user", "system", "assistant", "tool"}[rng.IntN(4)], "content": text()}
		if rng.IntN(3) == 0 {
			m["name"] = text()
		}
		if rng.IntN(4) == 0 {
			m["x_extra"] = text()
		}
		if rng.IntN(4) == 0 {
			m["content"] = []any{
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "u", "detail": []string{"low", "high"}[rng.IntN(2)]}},
				map[string]any{"type": "tool_result", "tool_use_id": text(), "content": text()},
				map[string]any{"type": "other", "data": text()},
			}
		}
		msgs = append(msgs, m)
	}
	req := map[string]any{"model": "m" + strconv.Itoa(rng.IntN(9)), "messages": msgs, "max_tokens": rng.IntN(5000)}
	for _, k := range []string{"prompt", "input", "instructions", "system", "tools", "text", "n", "stream"} {
		if rng.IntN(4) == 0 {
			req[k] = text()
		}
	}
	if rng.IntN(4) == 0 {
		req["input"] = []any{map[string]any{"role": "user", "content": text()}, 12, "s", []any{1, 2}}
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	// encoding/json escapes <, > and & as \u003c...; add the other escapes
	// a client may write.
	if rng.IntN(2) == 0 {
		b = bytes.ReplaceAll(b, []byte("é"), []byte(`\u00e9`))
		b = bytes.ReplaceAll(b, []byte("😀"), []byte(`\ud83d\ude00`))
		b = bytes.ReplaceAll(b, []byte("a"), []byte(`\u0061`))
		b = bytes.ReplaceAll(b, []byte("/"), []byte(`\/`))
		b = bytes.ReplaceAll(b, []byte("中"), []byte(`\ud800`))
	}
	return b
}

func TestParseChargesWhatItChargedBeforeTheSpeedRewrite(t *testing.T) {
	for _, r := range buildCorpus(40) {
		requireParseMatchesReference(t, r.body)
	}
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		requireParseMatchesReference(t, chatBody(size))
	}
	for _, s := range fuzzSeeds {
		requireParseMatchesReference(t, []byte(s))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		requireParseMatchesReference(t, randomBody(rng))
	}
}

func FuzzTextMatchesReference(f *testing.F) {
	for _, s := range append(fuzzSeeds, "😀 中文 1234 qwxzvkjpq \t\n  ~^|`", "9a5f80b7-c3d2", "HTTPServer getURL x86_64 ... -> ==") {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) { requireTextMatchesReference(t, s) })
}

func FuzzParseMatchesReference(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":"\ud83d\ude00 \u00e9\n\"x\" \ud800 a\/b"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) { requireParseMatchesReference(t, body) })
}
