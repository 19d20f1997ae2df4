package estimate

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// notLower flags the first byte that is not a lower-case letter exactly,
// whatever the bytes around it: every byte value at every position after
// lower-case letters, followed by random bytes, and random words of letters
// and the bytes next to 'a' and 'z'.
func TestNotLowerFindsTheFirstByteThatIsNotALowerCaseLetter(t *testing.T) {
	t.Parallel()
	first := func(b []byte) int {
		for i, c := range b {
			if c < 'a' || c > 'z' {
				return i
			}
		}
		return 8
	}
	check := func(b []byte) {
		got := bits.TrailingZeros64(notLower(binary.LittleEndian.Uint64(b))) >> 3
		require.Equal(t, first(b), got, "%q", b)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, 8)
	for at := range 8 {
		for c := range 256 {
			for range 8 {
				for i := range b {
					b[i] = byte(rng.IntN(256))
				}
				for i := range at {
					b[i] = 'a' + byte(rng.IntN(26))
				}
				b[at] = byte(c)
				check(b)
			}
		}
	}
	edges := []byte{'a', 'z', 'a' - 1, 'z' + 1, 'A', 'Z', 0, 0x7f, 0x80, 0xfa, 0xfb, 0xff, ' '}
	for range 100000 {
		for i := range b {
			b[i] = edges[rng.IntN(len(edges))]
		}
		check(b)
	}
}
