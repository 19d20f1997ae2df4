package jsonx

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// AppendUnescaped decodes as Str does, into the caller's buffer; with
// KeepInvalidUTF8 only the escapes change, so invalid bytes the client
// sent are still there to be counted.
func TestAppendUnescapedDecodesLikeStrAndKeepsInvalidBytesOnRequest(t *testing.T) {
	for _, c := range []struct{ raw, str, kept string }{
		{`"plain"`, "plain", "plain"},
		{`"a\nb\"c\\d\/e\u00e9\ud83d\ude00"`, "a\nb\"c\\d/eé😀", "a\nb\"c\\d/eé😀"},
		{"\"x\xffy\\n\"", "x\ufffdy\n", "x\xffy\n"},
		{`"\ud800x\udc00"`, "\ufffdx\ufffd", "\ufffdx\ufffd"},
		{"\"\xc3\\t0123456789abcdef\"", "\ufffd\t0123456789abcdef", "\xc3\t0123456789abcdef"},
	} {
		v := Parse([]byte(c.raw))
		require.True(t, v.Exists(), c.raw)
		require.Equal(t, c.str, v.Str())
		require.Equal(t, "pre"+c.str, string(AppendUnescaped([]byte("pre"), v.Content(), 0)), c.raw)
		require.Equal(t, "pre"+c.kept, string(AppendUnescaped([]byte("pre"), v.Content(), KeepInvalidUTF8)), c.raw)
	}
	require.Nil(t, Parse([]byte(`1`)).Content())
}

func FuzzAppendUnescaped(f *testing.F) {
	for _, s := range []string{`"a\n"`, "\"\xff\\u00e9\"", `"\ud800\udc00\ud800"`, `"0123456789\\abcdef"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := Parse(b)
		if v.Kind != String {
			return
		}
		require.Equal(t, v.Str(), string(AppendUnescaped(nil, v.Content(), 0)))
		kept := AppendUnescaped(nil, v.Content(), KeepInvalidUTF8)
		if utf8.Valid(v.Content()) {
			require.Equal(t, v.Str(), string(kept))
		}
		require.Equal(t, v.Str(), string([]rune(string(kept))), "replacing the kept bytes gives the decoding")
		requireRoomyBuffersDecodeAlike(t, v.Content())
	})
}

// requireRoomyBuffersDecodeAlike holds the decoding into a buffer with room
// to spare, which takes the eight-bytes-a-turn loop, to the decoding into
// none, which does not, for several sizes of room around len(c).
func requireRoomyBuffersDecodeAlike(t *testing.T, c []byte) {
	t.Helper()
	for _, o := range []UnescapeOptions{0, KeepInvalidUTF8} {
		want := string(AppendUnescaped(nil, c, o))
		for _, room := range []int{8, len(c), len(c) + 3, len(c) + 8, 2*len(c) + 16} {
			got := AppendUnescaped(append(make([]byte, 0, 2+room), "pr"...), c, o)
			require.Equal(t, "pr"+want, string(got), "%q into room for %d bytes, options %d", c, room, o)
		}
	}
}

// The turns of eight bytes end at each backslash and at each end of the
// buffers, the last bytes go one a turn, and a \u escape decodes to one,
// two or three bytes or is left to the Go loop (a surrogate): strings of
// escapes, runs of plain bytes of every length around eight, and invalid
// bytes, decoded into buffers with room, decode as into none.
func TestAStringDecodesAlikeWhateverRoomItsBufferHas(t *testing.T) {
	t.Parallel()
	atoms := []string{`\n`, `\t`, `\"`, `\\`, `\/`, `\b`, `\f`, `\r`, `\u00e9`, `\ud83d\ude00`, `\ud800`, "\xff", "é",
		`\u003c`, `\u0000`, `\u007F`, `\u0080`, `\u07ff`, `\u0800`, `\uD7FF`, `\udfff`, `\uE000`, `\uFFFF`, `\uaBcD`, `\ud55c`,
		"a", "ab", "abc", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmnopq", " ", "{", "}"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		var b []byte
		for range rng.IntN(24) {
			b = append(b, atoms[rng.IntN(len(atoms))]...)
		}
		requireRoomyBuffersDecodeAlike(t, b)
	}
}
