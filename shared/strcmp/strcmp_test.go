package strcmp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/strcmp"
)

func TestEqualAnswersAsTheLanguageDoes(t *testing.T) {
	t.Parallel()
	key := "tb|t|api_key|v1|" + strings.Repeat("0123456789abcdef", 4)
	cases := []struct {
		name string
		a, b string
	}{
		{"both empty", "", ""},
		{"empty and not", "", "a"},
		{"one byte", "a", "a"},
		{"one byte differs", "a", "b"},
		{"a whole word", "abcdefgh", "abcdefgh"},
		{"a word differs in its first byte", "xbcdefgh", "abcdefgh"},
		{"a word differs in its last byte", "abcdefgx", "abcdefgh"},
		{"the tail differs", "abcdefghi", "abcdefghj"},
		{"lengths differ", "abcdefgh", "abcdefghi"},
		{"bucket keys", key, strings.Clone(key)},
		{"a key with itself", key, key},
		{"views of one buffer at one address, of two lengths", key[:20], key[:21]},
		{"bucket keys differ at the end", key, key[:len(key)-1] + "0"},
		{"bucket keys differ in the middle", key, strings.Replace(key, "v1", "v2", 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.a == c.b, strcmp.Equal(c.a, c.b))
			require.Equal(t, c.a == c.b, strcmp.Equal(c.b, c.a))
		})
	}
}

func FuzzEqualAnswersAsTheLanguageDoes(f *testing.F) {
	f.Add("tb|t|global|v1|", "tb|t|global|v1|")
	f.Add("abcdefghi", "abcdefghj")
	f.Fuzz(func(t *testing.T, a, b string) {
		require.Equal(t, a == b, strcmp.Equal(a, b))
		require.True(t, strcmp.Equal(a, strings.Clone(a)))
		if len(a) > 0 {
			// A string and the same string with one byte changed.
			c := []byte(a)
			c[len(c)/2] ^= 1
			require.False(t, strcmp.Equal(a, string(c)))
		}
	})
}
