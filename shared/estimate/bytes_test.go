package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBytesNobodyCouldReadAreEstimatedAtFourATokenRoundedUp(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]int64{-5: 0, 0: 0, 1: 1, 4: 1, 5: 2, 9_200_020: 2_300_005, 1 << 40: MaxInput} {
		require.Equal(t, want, Bytes(n), n)
	}
}
