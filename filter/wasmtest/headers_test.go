package wasmtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// The binding answers a headers callback's reads from one listing of the
// map, except for a header the map holds more than once: that one is asked
// of the host, whose answer for repeated headers is its own. A repeated key
// header is therefore never read as if only its first copy were there.
func TestARepeatedKeyHeaderIsReadAsTheHostGivesIt(t *testing.T) {
	cfg := streamCfg(true, false)
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	x.do(call{headers: host.Headers{{"authorization", "Bearer sk-rep"}, {"authorization", "Bearer sk-rep"}},
		body: chatBody("hi", 1000), chunks: []string{chatResponse(30, 12)}})
	require.Equal(t, int64(100000), x.level(t, "sk-rep", probe), "charged to the key of one copy")
	x.do(call{key: "sk-rep", body: chatBody("hi", 1000), chunks: []string{chatResponse(30, 12)}})
	require.Equal(t, int64(100000-42), x.level(t, "sk-rep", probe), "a single copy is that key's")
}
