package jsonx

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var allStringOptions = []StringOptions{0, LikeMarshal, EscapeDEL, LikeMarshal | EscapeDEL}

// Each option adds only its own escapes: the same input written under any
// set is the same string to a reader.
func TestStringOptionsAddOnlyTheirOwnEscapes(t *testing.T) {
	in := "<a&b>\b\f\x7f\"\\\n"
	for o, want := range map[StringOptions]string{
		0:                       `"<a&b>\u0008\u000c` + "\x7f" + `\"\\\n"`,
		LikeMarshal:             `"\u003ca\u0026b\u003e\b\f` + "\x7f" + `\"\\\n"`,
		EscapeDEL:               `"<a&b>\u0008\u000c\u007f\"\\\n"`,
		LikeMarshal | EscapeDEL: `"\u003ca\u0026b\u003e\b\f\u007f\"\\\n"`,
	} {
		got := AppendStringWith(nil, in, o)
		require.Equal(t, want, string(got), "options %d", o)
		back, ok := Unquote(got)
		require.True(t, ok)
		require.Equal(t, in, back, "options %d", o)
	}
	require.Equal(t, AppendString(nil, in), AppendStringWith(nil, in, 0))
}

// LikeMarshal is encoding/json's Marshal spelling, byte for byte, on any
// input (invalid UTF-8 included).
func FuzzAppendStringWithOptions(f *testing.F) {
	for _, s := range []string{"", "<&>", "\b\f\x7f", "\xff\xc3", "\u2028\u2029", "日本\x00",
		"eight-by&te words<then \x7f a quote\" a backslash\\ and \x01 more", "sk-1234567890abcdef/é/0123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendStringWith(nil, s, LikeMarshal)))
		for _, o := range allStringOptions {
			out := AppendStringWith(nil, s, o)
			require.True(t, json.Valid(out), "options %d: %q", o, out)
			var back string
			require.NoError(t, json.Unmarshal(out, &back))
			require.Equal(t, string([]rune(s)), back, "options %d: each invalid byte reads as U+FFFD", o)
			if o&EscapeDEL != 0 {
				require.NotContains(t, string(out), "\x7f")
			}
			if utf8.ValidString(s) {
				require.Equal(t, s, back)
			}
		}
	})
}

// A string array is written as encoding/json writes it, empty included.
func TestAppendStringsWritesWhatEncodingJSONWrites(t *testing.T) {
	t.Parallel()
	for _, ss := range [][]string{{}, {"a"}, {"a", "b\"c", "ü\n"}} {
		want, err := json.Marshal(ss)
		require.NoError(t, err)
		require.Equal(t, string(want), string(AppendStrings(nil, ss)))
	}
}
