package bench

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostCallCases are the request shapes whose host calls per request are
// pinned: the per-request benchmark's two dimensions, all six with token
// budgets, and all six with request counts as well.
var hostCallCases = []struct {
	name   string
	short  string // its name for TOKENBUDGET_INSTRUCTION_CONFIG
	config string
	max    int64 // host calls one steady-state request may make
	// batched is the bound with token_budget.refund_batching: settlement
	// leaves the token buckets to the next admission or the tick.
	batched int64
}{
	{"2 dimensions", "", budgetConfig, 17, 12},
	{"6 dimensions", "six", sixDimensionConfig(tokenLimits), 34, 21},
	{"6 dimensions + request counts", "six+requests", sixDimensionConfig(tokenLimits + ", " + requestLimits), 34, 21},
}

// withRefundBatching is config with token_budget.refund_batching on.
func withRefundBatching(t testing.TB, config string) string {
	t.Helper()
	i := strings.LastIndex(config, "}")
	require.Positive(t, i)
	return config[:i] + `, "token_budget": { "refund_batching": true } }`
}

// callsPerRequest runs warm requests through d and returns the host calls
// of the last steady-state one, by host function. The first requests define
// the metric series and size the guest's buffers, once per VM.
func callsPerRequest(t testing.TB, d *driver, e exchange) (total int64, byName map[string]int64) {
	for range 3 {
		d.doOnce(e)
	}
	before := d.h.HostCalls()
	d.doOnce(e)
	after := d.h.HostCalls()
	byName = map[string]int64{}
	for name, n := range after {
		if n -= before[name]; n > 0 {
			byName[name] = n
			total += n
		}
	}
	return total, byName
}

// Every host call costs a crossing of the VM boundary (about 1.3 k host
// instructions before the call does anything): a metered request must make
// few of them, whatever the number of dimensions.
func TestAMeteredRequestMakesFewHostCalls(t *testing.T) {
	for _, c := range hostCallCases {
		for _, mode := range []struct {
			name   string
			config string
			max    int64
		}{{"refunds at settlement", c.config, c.max}, {"refund_batching", withRefundBatching(t, c.config), c.batched}} {
			t.Run(c.name+"/"+mode.name, func(t *testing.T) {
				d := newDriver(t, filter, mode.config)
				e := exchange{key: "sk-bench", body: chatBody(t, 1<<10, false), chunks: [][]byte{chatResponse(256, 20)}}
				total, byName := callsPerRequest(t, d, e)
				t.Logf("%d host calls per request: %s", total, describeCalls(byName))
				require.LessOrEqual(t, total, mode.max, "host calls per request: %s", describeCalls(byName))
			})
		}
	}
}

func describeCalls(byName map[string]int64) string {
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strings.TrimPrefix(n, "env.proxy_"))
		b.WriteString("×")
		b.WriteString(strconv.FormatInt(byName[n], 10))
	}
	return b.String()
}
