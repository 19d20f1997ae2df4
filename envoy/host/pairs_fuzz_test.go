package host

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzDecodePairsNeverPanicsAndRoundTrips feeds the host's pairs reader (the one every
// module-supplied header list goes through) arbitrary bytes: it must never panic, never return
// more pairs than cpp-host's limit, and whatever it accepts must encode back to the same bytes.
func FuzzDecodePairsNeverPanicsAndRoundTrips(f *testing.F) {
	f.Add(encodePairs(Headers{{":method", "GET"}, {"x", ""}}))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 200, 0, 0, 0, 1, 0, 0, 0, 'x'})
	f.Add([]byte{255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		hs := decodePairs(b)
		require.LessOrEqual(t, len(hs), maxPairsCount)
		if len(hs) > 0 {
			require.Equal(t, b, encodePairs(hs), "an accepted buffer is exactly its pairs")
		}
	})
}

func TestDecodePairsReadsLikeCppHostsToPairs(t *testing.T) {
	big := make(Headers, maxPairsCount+1)
	for i := range big {
		big[i] = [2]string{"k", "v"}
	}
	for _, tc := range []struct {
		rule string
		in   []byte
		want Headers
	}{
		{"well-formed pairs are read in order", encodePairs(Headers{{"a", "1"}, {"b", ""}}), Headers{{"a", "1"}, {"b", ""}}},
		{"nothing is no pairs", nil, nil},
		{"a zero count is no pairs", []byte{0, 0, 0, 0}, nil},
		{"a size past the end is no pairs", []byte{1, 0, 0, 0, 200, 0, 0, 0, 1, 0, 0, 0, 'x'}, nil},
		{"a missing terminator is no pairs", []byte{1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 'a', 'x', 'b', 0}, nil},
		{"bytes left over are no pairs", append(encodePairs(Headers{{"a", "1"}}), 0), nil},
		{"more than 1024 pairs are no pairs", encodePairs(big), nil},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			require.Equal(t, tc.want, decodePairs(tc.in))
		})
	}
}
