package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	spendledger "github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// outage stands in front of each gateway's sharedstore: while down, every
// call answers 503 at once, as a service that lost Redis does.
type outage struct{ down atomic.Bool }

func (o *outage) in(t *testing.T) gwOpt {
	return func(c *gateway.Config) {
		target, err := url.Parse(c.Clusters["sharedstore"])
		require.NoError(t, err)
		proxy := httputil.NewSingleHostReverseProxy(target)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if o.down.Load() {
				http.Error(w, "sharedstore down", http.StatusServiceUnavailable)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		c.Clusters = map[string]string{"sharedstore": srv.URL}
	}
}

// outageConfig: fallback_to_memory and fleet_spend on; key sk-ledger (id
// kl) has no limit in the config (the ledger gives it one), key sk-spent
// (id ks) a $1 daily limit; gpt-4o at $2.50 in and $10 out per million.
func outageConfig() string {
	cfg := fleetConfig(`{"per_api_key":{"tokens_per_minute":100000000}}`, fleetToken, 2000, true)
	cfg = strings.Replace(cfg, `"fallback_to_memory":true`, `"fallback_to_memory":true,"fleet_spend":true`, 1)
	return cfg[:len(cfg)-1] + `,"pricing":{"gpt-4o":{"input":"2.50","output":"10"}},"api_keys":[` +
		`{"key":"sk-ledger","id":"kl","team":"acme"},{"key":"sk-spent","id":"ks","team":"acme","spend_limit_day_usd":1}]}`
}

// While sharedstore is down, each gateway admits a key against what the
// fleet's last verdict left it, refuses a key that verdict found
// exhausted, and queues the records of what it admitted, which reach the
// ledger when the service answers again. The figures of the attack are
// this test's log:
//
//	TOKENBUDGET_WASM=$PWD/build/filter.wasm TOKENBUDGET_PASSTHROUGH_WASM=$PWD/build/passthrough.wasm \
//	  go test -count=1 -v -run TestFleetSpendHoldsThroughAStoreOutageAndItsRecordsReachTheLedger ./e2e/ | grep outage
func TestFleetSpendHoldsThroughAStoreOutageAndItsRecordsReachTheLedger(t *testing.T) {
	served := &servedLog{}
	out := &outage{}
	f := startLedgerFleet(t, outageConfig(), out.in(t), func(c *gateway.Config) {
		c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add})
	})
	ctx := context.Background()
	// a limit only the ledger knows: $0.05 a day for key kl
	require.NoError(t, f.led.PutPolicy(ctx, "acme", spendledger.Policy{Scope: spend.APIKey, ID: "kl", Period: calendar.Day, Limit: 50_000_000}))
	gws := []*gateway.Gateway{f.a, f.b}
	records := func() (n int64) {
		require.NoError(t, f.pool.QueryRow(ctx, "SELECT count(*) FROM inference_records").Scan(&n))
		return n
	}
	cent := func(g *gateway.Gateway, key string) int { // about $0.01, and at most that
		return post(t, g, "/v1/chat/completions", key, chat(1000), "x-mock-output-tokens", "1000").status
	}
	dime := func(g *gateway.Gateway, key string) int { // about $0.10, and at most that
		return post(t, g, "/v1/chat/completions", key, chat(10000), "x-mock-output-tokens", "10000").status
	}

	// Up: one cent-call of kl on each gateway; ks spent until refused on both.
	for _, g := range gws {
		require.Equal(t, 200, cent(g, "sk-ledger"))
		require.True(t, waitFor(5*time.Second, func() bool { return g.Host().OpenStreams() == 0 }))
	}
	// ks: spent until both gateways refuse it, each call's record landed
	// before the next (so the check-only rule refuses too)
	spent := 0
	for i, refusedRun := 0, 0; refusedRun < 2; i++ {
		require.Less(t, i, 40)
		r := post(t, gws[i%2], "/v1/chat/completions", "sk-spent", chat(10000), "x-mock-output-tokens", "10000")
		if r.status != 200 {
			require.Equal(t, 429, r.status, string(r.body))
			refusedRun++
			continue
		}
		refusedRun = 0
		spent++
		// paced by the ledger: the check-only rule sees a call only once
		// its record is in (a record lost by a fallback admission shows in
		// the last assertion instead)
		waitFor(5*time.Second, func() bool { return records() >= int64(2+spent) })
	}
	before := records()
	from := served.quiet(t)
	up, _ := servedCost(served, 0)

	// Down.
	out.down.Store(true)
	admitted := map[string]int{}
	for i := 0; i < 50; i++ {
		g := gws[i%2]
		if cent(g, "sk-ledger") == 200 {
			admitted["kl"]++
		}
		if dime(g, "sk-spent") == 200 {
			admitted["ks"]++
		}
	}
	served.quiet(t)
	down, largest := servedCost(served, from)

	// Up again: the records of the fallback admissions reach the ledger.
	out.down.Store(false)
	want := before + int64(admitted["kl"]+admitted["ks"])
	delivered := waitFor(20*time.Second, func() bool { return records() == want })
	t.Logf("outage: kl ($0.05/day in the ledger) admitted %d, ks (spent $1/day key) admitted %d; served %s during the outage "+
		"(%s before it); %d of its %d records reached the ledger",
		admitted["kl"], admitted["ks"], usdText(down), usdText(up), records()-before, want-before)
	require.Zero(t, admitted["ks"], "an exhausted key stays refused on every gateway")
	require.Positive(t, admitted["kl"], "what remained is admitted")
	require.LessOrEqual(t, down, int64(2*50_000_000)+largest,
		"each gateway admits at most what its last verdict left of the $0.05 (here well under it)")
	require.True(t, delivered, "every record of the outage reached the ledger")
	for _, g := range gws {
		require.Empty(t, g.Host().Traps())
	}
}
