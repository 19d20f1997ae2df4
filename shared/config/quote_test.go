package config

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuotedMapKeysAreSpelledLikeEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "gpt-4.1", `a"b\c`, "<&>", "tab\there\n\r\b\f", "\x00\x1f\x7f", "ключ", "\u2028\u2029", "bad\xffutf8\xc3", "emoji 😀"} {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendQuoted(nil, s)), "%q", s)
	}
}

func FuzzQuotedMatchesEncodingJSON(f *testing.F) {
	f.Add("gpt-4.1")
	f.Add("<\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		require.NoError(t, err)
		require.Equal(t, string(want), string(appendQuoted(nil, s)))
	})
}
