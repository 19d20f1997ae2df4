package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

// The bodies the filter cannot read whole, replayed as a client would
// through real HTTP against the mock backend: an answer larger than any
// buffer, and request bodies the filter cannot estimate. Each logs what the
// mock served and what the gateway charged.

// unreadablePricing prices gpt-4o at $2.50 and $10 per million tokens and
// everything else at a cheap default, and gives the attacker's key a spend
// limit so every request is priced.
const unreadablePricing = `"pricing":{"default":{"input":"0.10","output":"0.40"},"gpt-4o":{"input":"2.50","output":"10.00"}},
	"api_keys":[{"key":"sk-huge","id":"huge","spend_limit_day_usd":1000},{"key":"sk-burst","id":"burst","spend_limit_day_usd":1000},
	{"key":"sk-model","id":"model","spend_limit_day_usd":1000}]`

// The figure: a non-streamed answer larger than the 8 MiB body
// buffer, 2,300,005 tokens reported, was charged its hold of 4,104 tokens
// ($0.041 instead of $23.00). It is charged what it reported.
func TestE2EAnAnswerLargerThanAnyBufferIsChargedItsReportedUsage(t *testing.T) {
	served := &servedLog{}
	g := startGateway(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000000}},"budget_division":{"replicas":1}},`+
		unreadablePricing+`}`, withClock(&frozenClock{t: time.Unix(1_800_000_000, 0)}),
		func(c *gateway.Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add}) })
	before := charged(t, []*gateway.Gateway{g})
	require.Equal(t, 200, send(t, g, "sk-huge", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, nil,
		"x-mock-output-tokens", "2300000"))
	served.quiet(t)
	spent := spentNano(t, g)
	paid := charged(t, []*gateway.Gateway{g}) - before
	total, _ := served.tokensFrom(0)
	t.Logf("huge answer: served %d tokens, charged %d tokens and $%s", total, paid, usdText(spent))
	require.Equal(t, int64(2_300_005), total)
	require.Equal(t, total, paid, "charged exactly what the backend reported")
	require.Equal(t, int64(23_000_012_500), spent, "$23.0000125: 5 × $2.50/M + 2,300,000 × $10/M")
	require.Empty(t, g.Host().Traps())
}

// burst sends n copies of body at once with key and returns the statuses.
func burst(t *testing.T, g *gateway.Gateway, key, body string, n int, extra http.Header, hdr ...string) map[int]int {
	t.Helper()
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := send(t, g, key, body, extra, hdr...)
			mu.Lock()
			statuses[s]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return statuses
}

// oversized is a chat body over 1,024 bytes asking for maxTokens.
func oversized(model string, maxTokens string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"` + strings.Repeat("go on ", 200) + `"}],"max_tokens":` + maxTokens + `}`
}

// The attacks with bodies over max_body_bytes, each admitted on a
// zero hold: 25 × 3,000 tokens at once on a 5,000-token key; max_tokens
// 100,000 past a model's 4,096 max_tokens_per_request; and gpt-4o priced
// at the default. By default every such body is refused with a 413 naming
// token_budget.max_body_bytes, not to be retried.
func TestE2EBodiesTheFilterCannotEstimateAreRefusedByDefault(t *testing.T) {
	served := &servedLog{}
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":5000}},"budget_division":{"replicas":1}},
	  "token_budget":{"max_body_bytes":1024},"models":{"gpt-4o":{"max_tokens_per_request":4096}},` + unreadablePricing + `}`
	g := startGateway(t, cfg, withClock(&frozenClock{t: time.Unix(1_800_000_000, 0)}),
		func(c *gateway.Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add}) })
	gws := []*gateway.Gateway{g}

	body := oversized("gpt-4o", "3000")
	require.Greater(t, len(body), 1024)
	before := charged(t, gws)
	statuses := burst(t, g, "sk-burst", body, 25, nil, "x-mock-output-tokens", "3000")
	served.quiet(t)
	total, _ := served.tokensFrom(0)
	t.Logf("burst of 25 oversized bodies on a 5,000-token key: statuses %v, served %d tokens, charged %d", statuses, total, charged(t, gws)-before)
	require.Equal(t, map[int]int{413: 25}, statuses)
	require.Zero(t, total)

	from := served.count()
	before = charged(t, gws)
	spentBefore := spentNano(t, g)
	status := send(t, g, "sk-model", oversized("gpt-4o", "100000"), nil, "x-mock-output-tokens", "100000")
	served.quiet(t)
	total, _ = served.tokensFrom(from)
	t.Logf("oversized gpt-4o body asking 100,000 past max_tokens_per_request 4,096: status %d, served %d tokens, charged %d, $%s",
		status, total, charged(t, gws)-before, usdText(spentNano(t, g)-spentBefore))
	require.Equal(t, 413, status)
	require.Zero(t, total)

	r := post(t, g, "/v1/chat/completions", "sk-model", body)
	require.Equal(t, 413, r.status)
	require.Equal(t, "false", r.header.Get("x-should-retry"))
	require.Contains(t, string(r.body), "token_budget.max_body_bytes")
	require.Empty(t, g.Host().Traps())
}

// Under on_unreadable_body "admit" the same bodies pass unread, but each
// holds its bytes' estimate plus default_output_tokens under the model
// header's limits: the burst is held to the key's budget, the model's
// max_tokens_per_request bounds what is reserved, and the model header
// prices it.
func TestE2EUnderAdmitBodiesTheFilterCannotEstimateAreHeldToTheBudget(t *testing.T) {
	served := &servedLog{}
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":5000}},"budget_division":{"replicas":1}},
	  "identity":{"model_header":"x-model"},"token_budget":{"max_body_bytes":1024,"on_unreadable_body":"admit"},
	  "models":{"gpt-4o":{"max_tokens_per_request":4096}},` + unreadablePricing + `}`
	g := startGateway(t, cfg, withClock(&frozenClock{t: time.Unix(1_800_000_000, 0)}),
		func(c *gateway.Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add}) })
	gws := []*gateway.Gateway{g}

	before := charged(t, gws)
	statuses := burst(t, g, "sk-burst", oversized("gpt-4o", "3000"), 25, nil, "x-mock-output-tokens", "3000")
	served.quiet(t)
	total, largest := served.tokensFrom(0)
	paid := charged(t, gws) - before
	t.Logf("admit: burst of 25 oversized bodies on a 5,000-token key: statuses %v, served %d tokens, charged %d", statuses, total, paid)
	require.LessOrEqual(t, total, 5000+largest, "the key's budget plus the one answer that overdraws it")
	require.Equal(t, total, paid, "each answer is charged its reported usage")
	require.Greater(t, statuses[429], 20, "%v", statuses)

	from := served.count()
	spentBefore := spentNano(t, g)
	status := send(t, g, "sk-model", oversized("gpt-4o", "3000"), http.Header{"X-Model": {"gpt-4o"}}, "x-mock-output-tokens", "1000")
	served.quiet(t)
	total, _ = served.tokensFrom(from)
	spent := spentNano(t, g) - spentBefore
	t.Logf("admit: an oversized gpt-4o body named by the model header: status %d, served %d tokens, $%s", status, total, usdText(spent))
	require.Equal(t, 200, status)
	require.Greater(t, spent, total*1000, "priced at gpt-4o's $2.50-$10 per million, not the default's $0.10-$0.40")
	require.Empty(t, g.Host().Traps())
}
