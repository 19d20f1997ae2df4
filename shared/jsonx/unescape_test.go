package jsonx

import (
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
	})
}
