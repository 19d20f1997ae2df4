package estimate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTextNeverExceedsOneTokenPerByte(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	require.Equal(t, int64(9), TextString("The quick brown fox jumps over the lazy dog"))
}

func TestTextChargesRandomLettersMoreThanWords(t *testing.T) {
	t.Parallel()
	require.Greater(t, TextString("qwxzvkjpq"), TextString("elephants"))
	require.Greater(t, TextString("9a5f80b7c3d2e1f0"), TextString("quarterly budget"))
}

func TestTextChargesRarePunctuationPerCharacterAndRepeatsLess(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(8), TextString("~^|`~^|`"))
	require.Less(t, TextString("--------------------------------"), int64(8))
}

// scan charges two punctuation characters on the spot (pairBits); they must
// cost what punctCost charges the same run, for every pair of punctuation
// bytes, control characters included, alone and between letters.
func TestTextChargesTwoPunctuationCharactersAsPunctCostDoes(t *testing.T) {
	for a := range 256 {
		for b := range 256 {
			if byteClass[a] != clsPunct || byteClass[b] != clsPunct {
				continue
			}
			p := []byte{byte(a), byte(b)}
			want := (punctCost(p) + unit - 1) / unit
			require.Equal(t, want, Text(p), "%q", p)
			require.Equal(t, 2+want, Text([]byte("ab"+string(p)+"cd")), "%q between words", p)
		}
	}
}

// scan charges a whitespace run of two or more without tracking newlines:
// such a run is a token plus one per change of character whatever it holds,
// and only a lone newline differs from a lone space.
func TestTextChargesWhitespaceRunsPerChangeOfCharacter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want int64
	}{
		{"a b", 2}, {"a\nb", 3}, {"a\rb", 3}, {"a ", 2}, {"a\n", 2},
		{"a  b", 3}, {"a\n\nb", 3}, {"a\n\tb", 4}, {"a \n \nb", 6}, {"a\t\t\t", 2},
		{"a" + strings.Repeat(" ", 16) + "b", 3}, {"a" + strings.Repeat(" ", 48) + "b", 4},
	} {
		require.Equal(t, tc.want, TextString(tc.s), "%q", tc.s)
	}
}
