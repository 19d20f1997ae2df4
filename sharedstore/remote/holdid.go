package remote

import "math/rand/v2"

// randomHoldID draws 128 bits as 32 lowercase hex digits. math/rand/v2's
// global generator is the runtime's ChaCha8, seeded at start from the
// host's random_get (which Envoy allows during _initialize, unlike the
// syscalls crypto/rand and time would link), so ids differ across workers,
// restarts and the fleet.
func randomHoldID() string {
	const digits = "0123456789abcdef"
	var b [32]byte
	for half := 0; half < 2; half++ {
		v := rand.Uint64()
		for i := 0; i < 16; i++ {
			b[half*16+i] = digits[v>>60]
			v <<= 4
		}
	}
	return string(b[:])
}
