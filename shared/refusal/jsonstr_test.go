package refusal

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestJSONStringEscapesWhatJSONRequires(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"plain":         `"plain"`,
		`q"b\`:          `"q\"b\\"`,
		"nl\n\t\r":      `"nl\n\t\r"`,
		"\x00\x1f\x7f":  `"\u0000\u001f\u007f"`,
		"\xff":          `"\ufffd"`,
		"é\u2028\u2029": `"é\u2028\u2029"`,
	}
	for in, want := range cases {
		require.Equal(t, want, string(appendJSONString(nil, in)), "%q", in)
	}
}

func FuzzJSONStringIsValidJSONAndRoundTrips(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00", "\xff\xfe", "\u2028", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendJSONString(nil, s)
		require.True(t, json.Valid(out), "%q → %s", s, out)
		var back string
		require.NoError(t, json.Unmarshal(out, &back))
		if utf8.ValidString(s) {
			require.Equal(t, s, back)
		}
		require.Equal(t, string([]rune(s)), back, "each invalid byte reads as U+FFFD")
	})
}
