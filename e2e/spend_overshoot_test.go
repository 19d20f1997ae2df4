package e2e

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

// Parallel callers on one key with a $1.00 daily spend limit, each asking
// for one stream of up to 10,000 output tokens of gpt-4o (about $0.10):
// the key must be served at most its limit plus one request's cost,
// however many callers arrive at once. Without a reservation at admission
// every caller that arrives before the first settlement is admitted.
//
// The figure in BENCHMARKS.md ("Spend overshoot under parallel callers")
// is this test's log:
//
//	TOKENBUDGET_WASM=$PWD/build/filter.wasm TOKENBUDGET_PASSTHROUGH_WASM=$PWD/build/passthrough.wasm \
//	  go test -count=1 -v -run 'TestE2EParallelCallersAreServedAtMostTheirSpendLimitPlusOneRequest' ./e2e/ | grep served

const overshootLimitUSD = "1"

// overshootKey is the key under attack in both configs.
const overshootKey = `{"key":"sk-burst","id":"burst","spend_limit_day_usd":` + overshootLimitUSD + `}`

func overshootLocalConfig() string {
	return `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000000}},"budget_division":{"replicas":1}},` +
		`"pricing":{"gpt-4o":{"input":"2.50","output":"10"}},"api_keys":[` + overshootKey + `]}`
}

func overshootFleetConfig() string {
	cfg := fleetConfig(`{"per_api_key":{"tokens_per_minute":100000000}}`, fleetToken, 2000, false)
	return cfg[:len(cfg)-1] + `,"pricing":{"gpt-4o":{"input":"2.50","output":"10"}},"api_keys":[` + overshootKey + `]}`
}

// spendBurst sends callers parallel streams through gws (round robin) and
// returns what the mock served and what the gateways charged, in nano-USD,
// with the largest single answer's cost.
func spendBurst(t *testing.T, served *servedLog, gws []*gateway.Gateway, callers int) (servedNano, chargedNano, largest int64) {
	t.Helper()
	from := served.quiet(t)
	before := int64(0)
	for _, g := range gws {
		before += spentNano(t, g)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			send(t, gws[i%len(gws)], "sk-burst", chatReq("spend it all "+strconv.Itoa(i), 10000, true), nil,
				"x-mock-output-tokens", "10000", "x-mock-tokens-per-chunk", "500", "x-mock-chunk-delay-ms", "10")
		}()
	}
	close(start)
	wg.Wait()
	served.quiet(t)
	servedNano, largest = servedCost(served, from)
	time.Sleep(600 * time.Millisecond) // the settlements' metrics reach the host on the filter's tick
	for _, g := range gws {
		chargedNano += spentNano(t, g)
	}
	return servedNano, chargedNano - before, largest
}

// servedCost is what the mock served from record from on, priced, and
// its largest answer's cost.
func servedCost(served *servedLog, from int) (total, largest int64) {
	served.mu.Lock()
	defer served.mu.Unlock()
	for _, s := range served.all[from:] {
		if s.Status != 200 {
			continue
		}
		c := priced(gptRates, s.InputTokens-s.CachedTokens, s.CachedTokens, 0, s.OutputTokens)
		total += c
		largest = max(largest, c)
	}
	return total, largest
}

func TestE2EParallelCallersAreServedAtMostTheirSpendLimitPlusOneRequest(t *testing.T) {
	const limitNano = 1_000_000_000
	stores := []struct {
		name  string
		start func(t *testing.T, onServed gwOpt) []*gateway.Gateway
	}{
		{"memory", func(t *testing.T, onServed gwOpt) []*gateway.Gateway {
			return []*gateway.Gateway{startGateway(t, overshootLocalConfig(), onServed)}
		}},
		{"fleet", func(t *testing.T, onServed gwOpt) []*gateway.Gateway {
			f := startLedgerFleet(t, overshootFleetConfig(), onServed)
			return []*gateway.Gateway{f.a, f.b}
		}},
	}
	t.Run("fleet/sequential", func(t *testing.T) {
		// one client, its next call sent as soon as the last answer ended,
		// alternating gateways: the hold is seen on the other gateway at
		// once, before the settlement reaches the ledger
		served := &servedLog{}
		f := startLedgerFleet(t, overshootFleetConfig(), func(c *gateway.Config) {
			c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add})
		})
		ok := 0
		for i := 0; i < 20; i++ {
			if send(t, []*gateway.Gateway{f.a, f.b}[i%2], "sk-burst", chatReq("one after another", 10000, false), nil,
				"x-mock-output-tokens", "10000") == 200 {
				ok++
			}
		}
		served.quiet(t)
		s, largest := servedCost(served, 0)
		t.Logf("fleet, one sequential client on two gateways: %d of 20 admitted, served %s at a $1.00 limit", ok, usdText(s))
		require.LessOrEqual(t, s, int64(limitNano)+largest, "at most one request's cost past the limit")
	})
	for _, st := range stores {
		for _, callers := range []int{32, 64} {
			t.Run(st.name+"/"+strconv.Itoa(callers), func(t *testing.T) {
				served := &servedLog{}
				gws := st.start(t, func(c *gateway.Config) {
					c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add})
				})
				s, c, largest := spendBurst(t, served, gws, callers)
				t.Logf("%s, %d callers: served %s, charged %s at a $1.00 limit (overshoot %s; one request %s)",
					st.name, callers, usdText(s), usdText(c), usdText(max(s-limitNano, 0)), usdText(largest))
				require.Positive(t, s, "the key is served up to its limit")
				require.LessOrEqual(t, s, int64(limitNano)+largest, "at most one request's cost past the limit")
				require.Equal(t, s, c, "charged what was served")
				for _, g := range gws {
					require.Empty(t, g.Host().Traps())
				}
			})
		}
	}
}
