package wasmtest

// The shared cases (sharedcases_test.go) are the table every proxy-wasm
// host that runs the filter must agree on: the SDK's proxytest emulator
// natively (sharedcases_emulator_test.go) and the compiled module in the
// Envoy-faithful wazero host (cases_test.go). Each host's test implements
// Host and calls Run; a case says what a client and an operator see, never
// how the host delivers it. Where the two hosts differ,
// docs/sdk-emulator.md says which is right and the case says which one it
// pins.

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Host runs the filter with one plugin configuration: two plugin contexts
// (Envoy's worker VMs, or two core.VMs under the emulator) sharing one
// shared-data map, an injected clock, and the fleet store the case asks for.
type Host interface {
	// Do plays one exchange to its end (the stream's log and done) and
	// returns what the client and the upstream saw.
	Do(e Exchange) Reply
	// Advance moves the clock every plugin context reads.
	Advance(d time.Duration)
	// Counter reads a counter by its series name (metrics.Name) after a
	// tick has handed the host the filter's pending increments; 0 when it
	// was never defined.
	Counter(name string) int64
	// Name is the host's name in failure messages.
	Name() string
}

// Exchange is one request and the upstream answer the host plays back
// unless the filter answers itself.
type Exchange struct {
	Plugin  int    // 0 or 1: which plugin context takes the stream
	Path    string // default /v1/chat/completions
	Key     string // sent as Authorization: Bearer <key> when set
	Headers [][2]string
	Body    string // empty: a request without a body
	Source  string // peer address, default 10.1.2.3:40000

	Status      int    // default 200
	ContentType string // default application/json
	RespHeaders [][2]string
	Chunks      []string // response body chunks; the last ends the stream
	Cut         bool     // the stream is reset after the chunks, before its end
	// ResetPending resets the stream after its body, while the fleet
	// store's admission answer is still on its way: the answer arrives
	// after the stream's end, and nothing reaches the upstream.
	ResetPending bool
}

// Reply is what the client saw, and what the filter forwarded upstream.
type Reply struct {
	Status  int
	Headers [][2]string
	Body    []byte
	// Local is true when the filter answered instead of the upstream.
	Local bool
	// UpstreamBody and UpstreamHeaders are the request as forwarded.
	UpstreamBody    []byte
	UpstreamHeaders [][2]string
	// Decision is the filter state the filter recorded for the access log
	// (nil when it recorded none).
	Decision map[string]any
}

// Header is the first value of a reply header, "" when absent.
func (r Reply) Header(name string) string { return Get(r.Headers, name) }

// Get is the first value of name among pairs, "" when absent.
func Get(pairs [][2]string, name string) string {
	for _, p := range pairs {
		if strings.EqualFold(p[0], name) {
			return p[1]
		}
	}
	return ""
}

// JSON decodes the reply body.
func (r Reply) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), string(r.Body))
	return m
}

// StoreMode is the fleet store a case's configuration talks to.
type StoreMode int

const (
	// NoStore: the configuration keeps its buckets in shared data.
	NoStore StoreMode = iota
	// FleetStore: a real sharedstore service on a real Redis answers the
	// "sharedstore" cluster with token StoreToken.
	FleetStore
	// StoreDown: every call to the "sharedstore" cluster fails.
	StoreDown
)

// StoreToken is the bearer token of the FleetStore.
const StoreToken = "hostcases-token"

// Case is one rule, run on every host.
type Case struct {
	Name   string
	Config string
	Store  StoreMode
	Run    func(t *testing.T, h Host)
}

// Run runs every case on the host newHost builds for it.
func Run(t *testing.T, newHost func(t *testing.T, c Case) Host) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) {
			c.Run(t, newHost(t, c))
		})
	}
}

// Atoi parses a header value that must be a number.
func Atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "not a number: %q", s)
	return n
}
