package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTextNeverExceedsOneTokenPerByte(t *testing.T) {
	for _, s := range []string{"", "\n", " ", "a", "1", " 1", "~", "\t \t \t \t", "\xff\xfe", "😀", "中", "é", "\t 1", "QWXZVKJPQ", "qwxzvkjpq"} {
		n := TextString(s)
		require.GreaterOrEqual(t, n, int64(0), "%q", s)
		require.LessOrEqual(t, n, int64(len(s)), "%q", s)
		require.Equal(t, n, Text([]byte(s)), "%q", s)
	}
}

// Both tokenizers split digits in groups of at most three and never join a
// space to a number.
func TestTextChargesDigitsPerGroupOfThreeAndTheSpaceBeforeThem(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int64
	}{
		{"1", 1}, {"123", 1}, {"1234", 2}, {"123456789", 3}, {"a 1", 3}, {"a 1234", 4},
	} {
		require.Equal(t, tc.want, TextString(tc.s), tc.s)
	}
}

func TestTextChargesOrdinaryWordsOneTokenEach(t *testing.T) {
	require.Equal(t, int64(9), TextString("The quick brown fox jumps over the lazy dog"))
}

func TestTextChargesRandomLettersMoreThanWords(t *testing.T) {
	require.Greater(t, TextString("qwxzvkjpq"), TextString("elephants"))
	require.Greater(t, TextString("9a5f80b7c3d2e1f0"), TextString("quarterly budget"))
}

func TestTextChargesRarePunctuationPerCharacterAndRepeatsLess(t *testing.T) {
	require.Equal(t, int64(8), TextString("~^|`~^|`"))
	require.Less(t, TextString("--------------------------------"), int64(8))
}
