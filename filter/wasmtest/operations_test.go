package wasmtest

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

// What an operator sees: the decision recorded for the access log, shadow
// mode, client-compatible headers and a store outage in the logs.

func TestEveryMeteredRequestRecordsItsDecisionForTheAccessLog(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":2000}},"budget_division":{"replicas":1}},
	  "api_keys":[{"key":"sk-known","id":"team-a-key"}],"token_budget":{"inject_stream_usage":false}}`
	x := newHarness(t, cfg)
	body := chatBody("hello", 500)

	admitted := x.do(call{key: "sk-known", body: body, chunks: []string{chatResponse(10, 5)}})
	require.Equal(t, "admitted", admitted.decision["outcome"])
	require.Equal(t, float64(inputOf(t, body)+500), admitted.decision["hold"])
	require.Equal(t, "settled", admitted.decision["end"])
	require.Equal(t, float64(15), admitted.decision["usage"])
	require.Equal(t, "team-a-key", admitted.decision["key_id"])
	require.NotContains(t, admitted.decision, "key_hash", "a listed key is named by its id")

	cut := x.do(call{key: "sk-other", body: streamBody(500, false), contentType: "text/event-stream",
		chunks: []string{openAIChunk("a")}, cut: true})
	require.Equal(t, "cut", cut.decision["end"])
	require.Equal(t, float64(inputOf(t, streamBody(500, false))+1), cut.decision["usage"])
	require.Equal(t, identity.HashKey("sk-other"), cut.decision["key_hash"], "an unlisted key is named by its hash")

	refused := x.do(call{key: "sk-known", body: chatBody("hello", 5000)})
	require.Equal(t, 429, refused.status)
	require.Equal(t, "refused", refused.decision["outcome"])
	require.Equal(t, "token_budget", refused.decision["limit_type"])
	require.Equal(t, "api_key", refused.decision["dimension"])

	failed := x.do(call{key: "sk-known", body: body, status: 500, chunks: []string{"{}"}})
	require.Equal(t, "released", failed.decision["end"])

	openBody := x.do(call{key: "sk-known", body: "not json", chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, "invalid", openBody.decision["outcome"])
	require.Equal(t, "invalid_json", openBody.decision["code"])

	for _, r := range []reply{admitted, cut, refused, failed, openBody} {
		raw, err := json.Marshal(r.decision)
		require.NoError(t, err)
		require.NotContains(t, string(raw), "sk-known", "the raw key is never recorded")
		require.NotContains(t, string(raw), "sk-other")
	}
	require.Nil(t, x.do(call{path: "/v1/models", key: "sk-known"}).decision, "routes the filter does not meter record nothing")
}

func TestShadowModeCountsWouldBeRefusalsAndAdmits(t *testing.T) {
	cases := []struct {
		name     string
		cfg      string
		status   int
		shadowed []string // dimensions counted as would-be refusals
	}{
		{"everything in shadow", `{"rate_limiting":{"mode":"shadow","limits":{"per_api_key":{"tokens_per_minute":100},
		  "global":{"requests_per_minute":1}},"budget_division":{"replicas":1}}}`, 200, []string{"global"}},
		{"one dimension in shadow, another enforced", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100,"mode":"shadow"},
		  "global":{"tokens_per_minute":450}},"budget_division":{"replicas":1}}}`, 200, []string{"api_key"}},
		{"an enforced dimension still refuses", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100,"mode":"shadow"},
		  "global":{"tokens_per_minute":150}},"budget_division":{"replicas":1}}}`, 429, nil},
		{"enforce is the default", `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100}},"budget_division":{"replicas":1}}}`,
			429, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newHarness(t, c.cfg)
			first := x.do(call{key: "sk-a", body: chatBody("hi", 50), chunks: []string{chatResponse(5, 5)}})
			require.Equal(t, 200, first.status)
			x.h.Tick() // the next request runs on the other worker: the refund reaches it on the tick
			r := x.do(call{key: "sk-a", body: chatBody("hi", 400), chunks: []string{chatResponse(5, 5)}})
			require.Equal(t, c.status, r.status, string(r.body))
			for _, d := range c.shadowed {
				n := int64(0)
				for _, lt := range []string{"token_budget", "requests_per_minute"} {
					n += x.metric(metrics.ShadowRefusals, metrics.LabelDimension, d, metrics.LabelLimitType, lt)
				}
				require.Positive(t, n, "the %s refusal was counted", d)
				require.NotEmpty(t, r.decision["shadow_refusals"])
			}
			if len(c.shadowed) == 0 {
				require.NotContains(t, r.decision, "shadow_refusals")
			}
		})
	}
}

func TestAShadowedRefusalLeavesTheBucketAsEnforcementWould(t *testing.T) {
	cfg := `{"rate_limiting":{"mode":"shadow","limits":{"per_api_key":{"tokens_per_minute":1000}},"budget_division":{"replicas":1}}}`
	probe := probeReserve(t, cfg)
	x := newHarness(t, cfg)
	require.Equal(t, 200, x.do(call{key: "sk-a", body: chatBody("hi", 800), chunks: []string{chatResponse(100, 500)}}).status)
	// Would be refused (the bucket holds 400): admitted, and it takes nothing.
	r := x.do(call{key: "sk-a", body: chatBody("hi", 900), chunks: []string{chatResponse(100, 700)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, float64(0), r.decision["hold"], "nothing was reserved")
	require.Equal(t, int64(1000-600), x.level(t, "sk-a", probe))
}

func TestClientCompatibleHeadersFollowTheConfig(t *testing.T) {
	base := `"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":6000,"requests_per_minute":10}},"budget_division":{"replicas":1}}`
	plain := newHarness(t, `{`+base+`}`).do(call{key: "sk-a", body: chatBody("hi", 100), chunks: []string{chatResponse(1, 1)}})
	require.Empty(t, plain.header("x-ratelimit-limit-tokens"))
	require.Empty(t, plain.header("ratelimit"))

	x := newHarness(t, `{`+base+`,"response_headers":{"openai":true,"ietf":true}}`)
	r := x.do(call{key: "sk-a", body: chatBody("hi", 100), chunks: []string{chatResponse(1, 1)}})
	require.Equal(t, "6000", r.header("x-ratelimit-limit-tokens"))
	require.Equal(t, r.header("x-ratelimit-tokens-remaining"), r.header("x-ratelimit-remaining-tokens"))
	require.Regexp(t, `^([0-9]+m)?[0-9]+s$`, r.header("x-ratelimit-reset-tokens"))
	require.Equal(t, "10", r.header("x-ratelimit-limit-requests"))
	require.Equal(t, r.header("x-ratelimit-requests-minute-remaining"), r.header("x-ratelimit-remaining-requests"))
	require.Contains(t, r.header("ratelimit-policy"), `"tokens-minute";q=6000;w=60`)
	require.Contains(t, r.header("ratelimit"), `"requests-minute";r=`+r.header("x-ratelimit-requests-minute-remaining")+`;t=`)

	refused := x.do(call{key: "sk-a", body: chatBody("hi", 7000)})
	require.Equal(t, 429, refused.status)
	require.Equal(t, "6000", refused.header("x-ratelimit-limit-tokens"), "a refusal by the caller's own bucket shows it too")
}

func TestAStoreOutageIsLoggedOnceWhenItStartsAndOnceWhenItEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there yet: the store is down
	cfg := `{"rate_limiting":{"storage":"redis","limits":{"per_api_key":{"tokens_per_minute":100000}},
	  "redis":{"cluster":"sharedstore","token":"tok","timeout_ms":1000,"fallback_to_memory":true}}}`
	x := newHarness(t, cfg, withClusters(map[string]string{"sharedstore": "http://" + addr}), withWorkers(1))
	for i := 0; i < 5; i++ {
		require.Equal(t, 200, x.do(call{key: "sk-a", body: chatBody("hi", 10), chunks: []string{chatResponse(1, 1)}}).status)
	}
	require.Equal(t, 1, x.logsContaining("is unreachable"), "one line for the whole outage")
	require.Equal(t, int64(0), x.gauge(metrics.StoreReachable))

	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	ln, err = net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{}), Token: "tok"})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	for i := 0; i < 3; i++ {
		require.Equal(t, 200, x.do(call{key: "sk-a", body: chatBody("hi", 10), chunks: []string{chatResponse(1, 1)}}).status)
	}
	require.Equal(t, 1, x.logsContaining("store answers again"))
	require.Equal(t, 1, x.logsContaining("is unreachable"))
	require.Equal(t, int64(1), x.gauge(metrics.StoreReachable))
}

func TestAStoreThatRefusesTheTokenIsLoggedAsARejectedTokenNotAsUnreachable(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	srv := httptest.NewServer(server.New(server.Config{Buckets: server.NewBuckets(rdb, server.Options{}), Token: "the-service-token"}))
	t.Cleanup(srv.Close)
	cfg := `{"rate_limiting":{"storage":"redis","limits":{"per_api_key":{"tokens_per_minute":100000}},
	  "redis":{"cluster":"sharedstore","token":"not-the-service-token","timeout_ms":1000,"fallback_to_memory":true}}}`
	x := newHarness(t, cfg, withClusters(map[string]string{"sharedstore": srv.URL}), withWorkers(1))
	for i := 0; i < 3; i++ {
		require.Equal(t, 200, x.do(call{key: "sk-a", body: chatBody("hi", 10), chunks: []string{chatResponse(1, 1)}}).status,
			"fallback_to_memory admits on the local buckets")
	}
	require.Equal(t, 1, x.logsContaining("sharedstore rejected the token (401)"), "one line, naming the cause")
	require.Equal(t, 0, x.logsContaining("unreachable"))
	require.Equal(t, 0, x.logsContaining("not-the-service-token"), "the token is never logged")
	require.Equal(t, int64(0), x.gauge(metrics.StoreReachable))
}

func (x *harness) logsContaining(s string) int {
	n := 0
	for _, e := range x.h.Logs() {
		if strings.Contains(e.Message, s) {
			n++
		}
	}
	return n
}

func (x *harness) gauge(name string) int64 {
	v, ok := x.h.Metric(name)
	require.True(x.t, ok, "gauge %s is defined", name)
	return v
}
