package identity

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The first-byte test only ever says what EqualFold would, and it says it
// for the names that differ at once.
func TestFirstBytesThatDifferAreNamesEqualFoldFindsUnequal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b   string
		differ bool
	}{
		{"x-api-key", "authorization", true},
		{"Content-Type", "authorization", true},
		{"@", "`", true},
		{"[", "{", true},
		{"Authorization", "authorization", false},
		{"authorization", "authorization", false},
		{"\u212a-key", "k-key", false}, // the Kelvin sign folds to k: EqualFold decides
		{"\u017f", "s", false},
		{"\xff", "a", false},
		{"", "a", false},
		{"a", "", false},
	} {
		require.Equal(t, c.differ, firstBytesDiffer(c.a, c.b), "%q %q", c.a, c.b)
		if c.differ {
			require.False(t, strings.EqualFold(c.a, c.b), "%q %q", c.a, c.b)
		}
	}
}

func FuzzFirstBytesThatDifferAreNamesEqualFoldFindsUnequal(f *testing.F) {
	f.Add("X-Api-Key", "x-api-key")
	f.Add("\u212aey", "key")
	f.Fuzz(func(t *testing.T, a, b string) {
		if firstBytesDiffer(a, b) {
			require.False(t, strings.EqualFold(a, b), "%q %q", a, b)
		}
	})
}
