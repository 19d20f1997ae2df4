package bucket

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodingRoundTripsEveryLimit(t *testing.T) {
	in := []State{{Level: 12.5, Last: 1}, {Level: -3, Last: math.MaxInt64}, {Level: 0, Last: 0}}
	buf := AppendEncoded(nil, in)
	require.Len(t, buf, EncodedLen(3))
	out := make([]State, 3)
	require.NoError(t, Decode(buf, out))
	require.Equal(t, in, out)
}

func TestAnIndebtedBucketKeepsItsDebtThroughTheEncoding(t *testing.T) {
	in := []State{{Level: -99_970.25, Last: 7}, {Level: -1e15, Last: 8}}
	out := make([]State, 2)
	require.NoError(t, Decode(AppendEncoded(nil, in), out))
	require.Equal(t, in, out, "a negative level is a debt, not a corrupt value")
}

func TestDecodeRefusesWhatIsNotOurs(t *testing.T) {
	good := AppendEncoded(nil, []State{{Level: 1, Last: 2}})
	nan := AppendEncoded(nil, []State{{Level: math.NaN(), Last: 2}})
	cases := []struct {
		name  string
		value []byte
		n     int
		err   error
	}{
		{"empty", nil, 1, ErrShortValue},
		{"other layout version", append([]byte{9}, good[1:]...), 1, ErrVersion},
		{"fewer limits than the op", good, 2, ErrLimitCount},
		{"truncated", good[:len(good)-1], 1, ErrLengthValue},
		{"trailing bytes", append(append([]byte{}, good...), 0), 1, ErrLengthValue},
		{"not a number", nan, 1, ErrInvalidLevel},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, Decode(c.value, make([]State, c.n)), c.err)
		})
	}
}

func FuzzDecodeNeverPanicsAndRoundTrips(f *testing.F) {
	f.Add(AppendEncoded(nil, []State{{Level: 1, Last: 2}, {Level: 3, Last: 4}}), 2)
	f.Add([]byte{1, 255}, 255)
	f.Add([]byte{}, 0)
	f.Fuzz(func(t *testing.T, value []byte, n int) {
		if n < 0 || n > 300 {
			return
		}
		states := make([]State, n)
		if Decode(value, states) != nil {
			return
		}
		require.Equal(t, value, AppendEncoded(nil, states))
	})
}

func BenchmarkEncode(b *testing.B) {
	states := []State{{Level: 12.5, Last: 1}, {Level: 3, Last: 2}}
	buf := make([]byte, 0, EncodedLen(2))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEncoded(buf[:0], states)
	}
}

func BenchmarkDecode(b *testing.B) {
	buf := AppendEncoded(nil, []State{{Level: 12.5, Last: 1}, {Level: 3, Last: 2}})
	states := make([]State, 2)
	b.ReportAllocs()
	for b.Loop() {
		if err := Decode(buf, states); err != nil {
			b.Fatal(err)
		}
	}
}
