package identity

import (
	"encoding/binary"
	"math/bits"
)

// SHA-256 (FIPS 180-4) in plain Go. crypto/sha256 cannot be linked into the
// .wasm: its FIPS module pulls crypto/internal/sysrand and with it syscall,
// whose wasip1 init traps in Envoy (docs/envoy-wasi.md). Hashing a key is not
// secret-dependent branching, so a straightforward implementation is enough.

const (
	sha256Size  = 32
	sha256Block = 64
)

var sha256Init = [8]uint32{
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
}

var sha256K = [64]uint32{
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
}

// sum256 is the SHA-256 digest of msg. It takes a string so hashing a
// header value needs no []byte copy of the whole key.
func sum256(msg string) [sha256Size]byte {
	h := sha256Init
	n := uint64(len(msg))
	var buf [sha256Block]byte
	for len(msg) >= sha256Block {
		copy(buf[:], msg[:sha256Block])
		sha256Compress(&h, &buf)
		msg = msg[sha256Block:]
	}
	// Padding: 0x80, zeros, then the bit length big-endian in the last 8
	// bytes; one extra block when fewer than 9 bytes are left.
	buf = [sha256Block]byte{}
	k := copy(buf[:], msg)
	buf[k] = 0x80
	if k >= sha256Block-8 {
		sha256Compress(&h, &buf)
		buf = [sha256Block]byte{}
	}
	binary.BigEndian.PutUint64(buf[sha256Block-8:], n<<3)
	sha256Compress(&h, &buf)

	var out [sha256Size]byte
	for i, v := range h {
		binary.BigEndian.PutUint32(out[i*4:], v)
	}
	return out
}

// sha256Compress folds one 64-byte block into the state (FIPS 180-4 §6.2.2).
func sha256Compress(h *[8]uint32, p *[sha256Block]byte) {
	var w [64]uint32
	for i := 0; i < 16; i++ {
		w[i] = binary.BigEndian.Uint32(p[i*4:])
	}
	for i := 16; i < 64; i++ {
		v1 := w[i-2]
		s1 := bits.RotateLeft32(v1, -17) ^ bits.RotateLeft32(v1, -19) ^ (v1 >> 10)
		v2 := w[i-15]
		s0 := bits.RotateLeft32(v2, -7) ^ bits.RotateLeft32(v2, -18) ^ (v2 >> 3)
		w[i] = s1 + w[i-7] + s0 + w[i-16]
	}
	a, b, c, d, e, f, g, hh := h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
	for i := 0; i < 64; i++ {
		t1 := hh + (bits.RotateLeft32(e, -6) ^ bits.RotateLeft32(e, -11) ^ bits.RotateLeft32(e, -25)) +
			((e & f) ^ (^e & g)) + sha256K[i] + w[i]
		t2 := (bits.RotateLeft32(a, -2) ^ bits.RotateLeft32(a, -13) ^ bits.RotateLeft32(a, -22)) +
			((a & b) ^ (a & c) ^ (b & c))
		hh, g, f, e, d, c, b, a = g, f, e, d+t1, c, b, a, t1+t2
	}
	h[0] += a
	h[1] += b
	h[2] += c
	h[3] += d
	h[4] += e
	h[5] += f
	h[6] += g
	h[7] += hh
}

// hexLower is the lower-case hex spelling of a digest, the form keys are
// stored and compared in.
func hexLower(sum [sha256Size]byte) string {
	const digits = "0123456789abcdef"
	var out [2 * sha256Size]byte
	for i, b := range sum {
		out[2*i] = digits[b>>4]
		out[2*i+1] = digits[b&0x0f]
	}
	return string(out[:])
}
