package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Parse runs on every request in the filter, where garbage is paid for by
// the whole Envoy worker. Strings are measured in the body and escaped ones
// decoded into one reused buffer, so a body of any size (the corpus's code
// is full of \n and \") costs the model copy and a few buffer growths, not
// an allocation per string.
func TestParseAllocatesAFewTimesWhateverTheBodySize(t *testing.T) {
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		body := chatBody(size)
		allocs := testing.AllocsPerRun(5, func() {
			_, err := Parse(body, 4096)
			require.NoError(t, err)
		})
		require.LessOrEqual(t, allocs, 4.0, "body of %d bytes", len(body))
	}
}
