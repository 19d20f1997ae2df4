package abi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPairsRoundTripKeepsOrderAndEmptyValues(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	enc := AppendPairs([]byte("pre"), [][2]string{{"ab", "c"}})
	require.Equal(t, []byte("pre"+
		"\x01\x00\x00\x00"+
		"\x02\x00\x00\x00\x01\x00\x00\x00"+
		"ab\x00c\x00"), enc)
}

func TestDecodePairsRejectsMalformedInput(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// specPairs reads the pairs encoding the plain way, field by field, as the
// oracle of the binding's decoder.
func specPairs(b []byte) ([][2]string, bool) {
	if len(b) == 0 {
		return nil, true
	}
	if len(b) < 4 {
		return nil, false
	}
	u32 := func(at int) int {
		return int(b[at]) | int(b[at+1])<<8 | int(b[at+2])<<16 | int(b[at+3])<<24
	}
	n := u32(0)
	if 4+8*n > len(b) || n > (len(b)-4)/10 {
		return nil, false
	}
	at := 4 + 8*n
	var out [][2]string
	for i := range n {
		var p [2]string
		for j := range 2 {
			size := u32(4 + 8*i + 4*j)
			if at+size >= len(b) || b[at+size] != 0 {
				return nil, false
			}
			p[j] = string(b[at : at+size])
			at += size + 1
		}
		out = append(out, p)
	}
	return out, true
}

// A list decoded onto a reused one keeps what was there and adds what the
// encoding says, pair by pair; a bad encoding leaves it as it was.
func FuzzDecodedPairsAreAppendedAsTheSpecReadsThem(f *testing.F) {
	f.Add(AppendPairs(nil, [][2]string{{"a", "b"}, {"", ""}}), 1)
	f.Add([]byte{2, 0, 0, 0, 1, 0, 0, 0}, 0)
	f.Add(AppendPairs(nil, [][2]string{{":path", "/v1/messages"}}), 3)
	f.Fuzz(func(t *testing.T, b []byte, kept int) {
		kept &= 7
		before := make([][2]string, kept, kept+1)
		for i := range before {
			before[i] = [2]string{"kept", string(rune('a' + i))}
		}
		got, ok := appendDecodedPairs(before, b)
		want, wantOK := specPairs(b)
		require.Equal(t, wantOK, ok)
		require.Equal(t, before, got[:kept], "what the list held stays")
		if !ok {
			require.Len(t, got, kept)
			return
		}
		require.Len(t, got, kept+len(want))
		for i := range want {
			require.Equal(t, want[i], got[kept+i])
		}
	})
}
