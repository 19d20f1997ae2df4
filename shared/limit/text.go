package limit

import "strconv"

// quote shows a refused name in an error, cut to 32 bytes so a long input
// does not become a long error.
func quote(b []byte) string {
	if len(b) > 32 {
		b = b[:32]
	}
	return strconv.Quote(string(b))
}
