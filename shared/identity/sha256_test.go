package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSum256MatchesFIPS180Vectors(t *testing.T) {
	tests := []struct{ name, msg, want string }{
		{"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"448 bits, padding spills into a second block", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
			"248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"896 bits", "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
			"cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
		{"one million a", strings.Repeat("a", 1000000), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, hexLower(sum256(tc.msg)))
		})
	}
}

// Every length 0..300 crosses each padding boundary (55/56/63/64 bytes and
// their multiples) several times.
func TestSum256MatchesCryptoSHA256AtEveryShortLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 300; n++ {
		for range 8 {
			msg := make([]byte, n)
			for i := range msg {
				msg[i] = byte(rng.Uint32())
			}
			want := sha256.Sum256(msg)
			require.Equal(t, want, sum256(string(msg)), "length %d", n)
		}
	}
}

func TestSum256MatchesCryptoSHA256OnMebibytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1 << 20, 3<<20 + 17, 2<<20 - 1} {
		msg := make([]byte, n)
		for i := range msg {
			msg[i] = byte(rng.Uint32())
		}
		want := sha256.Sum256(msg)
		require.Equal(t, want, sum256(string(msg)), "length %d", n)
	}
}

func TestHexLowerMatchesEncodingHex(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 100 {
		var sum [sha256Size]byte
		for i := range sum {
			sum[i] = byte(rng.Uint32())
		}
		require.Equal(t, hex.EncodeToString(sum[:]), hexLower(sum))
	}
	var all [sha256Size]byte
	for i := range all {
		all[i] = 0xff
	}
	require.Equal(t, strings.Repeat("f", 64), hexLower(all))
}

func FuzzSum256MatchesCryptoSHA256(f *testing.F) {
	f.Add([]byte("sk-test"))
	f.Add(make([]byte, 55))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, msg []byte) {
		want := sha256.Sum256(msg)
		if got := sum256(string(msg)); got != want {
			t.Fatalf("sum256(%x) = %x, want %x", msg, got, want)
		}
	})
}

var sinkKey string

// BenchmarkHashKey40 is the per-request cost of hashing a typical API key
// (a 40-byte "sk-…" string), hex included.
func BenchmarkHashKey40(b *testing.B) {
	key := "sk-proj-" + strings.Repeat("aB3", 10) + "xy"
	require.Len(b, key, 40)
	b.ReportAllocs()
	for b.Loop() {
		sinkKey = HashKey(key)
	}
}

// BenchmarkCryptoSHA256Key40 is the standard library baseline for the same
// work (not linkable into the .wasm).
func BenchmarkCryptoSHA256Key40(b *testing.B) {
	key := "sk-proj-" + strings.Repeat("aB3", 10) + "xy"
	b.ReportAllocs()
	for b.Loop() {
		sum := sha256.Sum256([]byte(key))
		sinkKey = hex.EncodeToString(sum[:])
	}
}
