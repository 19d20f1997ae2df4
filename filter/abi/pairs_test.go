package abi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPairsRoundTripKeepsOrderAndEmptyValues(t *testing.T) {
	cases := map[string][][2]string{
		"none":        {},
		"one":         {{":method", "POST"}},
		"empty value": {{"x-empty", ""}, {"", "no-name"}},
		"repeated":    {{"set-cookie", "a=1"}, {"set-cookie", "b=2"}, {":path", "/v1/chat/completions"}},
	}
	for name, pairs := range cases {
		t.Run(name, func(t *testing.T) {
			enc := AppendPairs(nil, pairs)
			got, ok := decodePairs(enc)
			require.True(t, ok)
			require.Len(t, got, len(pairs))
			for i := range pairs {
				require.Equal(t, pairs[i], got[i])
			}
		})
	}
}

func TestAppendPairsMatchesTheSpecLayout(t *testing.T) {
	enc := AppendPairs([]byte("pre"), [][2]string{{"ab", "c"}})
	require.Equal(t, []byte("pre"+
		"\x01\x00\x00\x00"+
		"\x02\x00\x00\x00\x01\x00\x00\x00"+
		"ab\x00c\x00"), enc)
}

func TestDecodePairsRejectsMalformedInput(t *testing.T) {
	good := AppendPairs(nil, [][2]string{{"key", "value"}})
	cases := map[string][]byte{
		"short count":        {1, 0},
		"count too large":    {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0},
		"truncated":          good[:len(good)-1],
		"missing terminator": append(append([]byte{}, good[:len(good)-1]...), 'x'),
		"size overruns":      {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0},
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			_, ok := decodePairs(b)
			require.False(t, ok)
		})
	}
}

func TestDecodePairsOfNothingIsAnEmptyMap(t *testing.T) {
	got, ok := decodePairs(nil)
	require.True(t, ok)
	require.Empty(t, got)
}

func FuzzDecodePairsNeverPanics(f *testing.F) {
	f.Add(AppendPairs(nil, [][2]string{{"a", "b"}, {"", ""}}))
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		pairs, ok := decodePairs(b)
		if !ok {
			return
		}
		// Whatever decodes must re-encode to a prefix of the input.
		enc := AppendPairs(nil, pairs)
		if len(b) > 0 {
			require.Equal(t, b[:len(enc)], enc)
		}
	})
}
