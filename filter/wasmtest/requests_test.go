package wasmtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

func details(t testing.TB, r reply) map[string]any {
	t.Helper()
	return r.json(t)["error"].(map[string]any)["details"].(map[string]any)
}

func ok(t testing.TB, x *harness, c call) reply {
	t.Helper()
	if c.chunks == nil {
		c.chunks = []string{chatResponse(1, 1)}
	}
	if c.body == "" {
		c.body = chatBody("hello", 10)
	}
	r := x.do(c)
	require.Equal(t, 200, r.status, string(r.body))
	return r
}

func TestRequestRateRefusesPastTheBurstWithTheCallersOwnHeaders(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"requests_per_second":1,"burst_capacity":3}}}}`)
	for i := 0; i < 3; i++ {
		r := ok(t, x, call{key: "sk-a"})
		require.Equal(t, "3", r.header("x-ratelimit-limit"))
		require.Equal(t, itoa(2-i), r.header("x-ratelimit-remaining"))
	}
	r := x.do(call{key: "sk-a", body: chatBody("hello", 10)})
	require.Equal(t, 429, r.status)
	require.Equal(t, "requests_per_second", details(t, r)["limit_type"])
	require.Equal(t, "1", r.header("retry-after"))
	require.Equal(t, "0", r.header("x-ratelimit-remaining"))
	require.Equal(t, int64(1), x.metric(metrics.Exceeded, metrics.LabelLimitType, "requests_per_second"))
	ok(t, x, call{key: "sk-b"}) // another key has its own bucket
	x.clock.Advance(secs(1))
	ok(t, x, call{key: "sk-a"})
}

func TestABucketSmallerThanOneSecondsRefillStillAdmitsTheRate(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"requests_per_second":4,"burst_capacity":1}}}}`)
	for i := 0; i < 4; i++ {
		ok(t, x, call{key: "sk-a"})
	}
	require.Equal(t, 429, x.do(call{key: "sk-a", body: chatBody("hello", 10)}).status)
}

func TestRequestCountHeadersSurviveATokenRefusal(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"requests_per_minute":10,"tokens_per_minute":1000}},
		"budget_division":{"replicas":1}}}`)
	r := x.do(call{key: "sk-a", body: chatBody("hello", 5000)})
	require.Equal(t, 429, r.status)
	require.Equal(t, "token_budget", details(t, r)["limit_type"])
	require.Equal(t, "10", r.header("x-ratelimit-requests-minute-limit"))
	require.Equal(t, "9", r.header("x-ratelimit-requests-minute-remaining"), "the request-count bucket admitted it")
}

func TestRequestMinuteAndDayLimitsRefuseWithTheirOwnLimitType(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"requests_per_minute":2,"requests_per_day":3}}}}`)
	ok(t, x, call{key: "sk-a"})
	ok(t, x, call{key: "sk-a"})
	r := x.do(call{key: "sk-a", body: chatBody("hello", 10)})
	require.Equal(t, "requests_per_minute", details(t, r)["limit_type"])
	x.clock.Advance(secs(60))
	ok(t, x, call{key: "sk-a"})
	x.clock.Advance(secs(60))
	r = x.do(call{key: "sk-a", body: chatBody("hello", 10)})
	require.Equal(t, "requests_per_day", details(t, r)["limit_type"])
	require.Equal(t, "3", r.header("x-ratelimit-requests-day-limit"))
}

func TestASharedRequestRefusalWithholdsItsLevel(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"global":{"requests_per_second":1,"burst_capacity":1}}}}`)
	r := ok(t, x, call{key: "sk-a"})
	require.Empty(t, r.header("x-ratelimit-limit"))
	r = x.do(call{key: "sk-b", body: chatBody("hello", 10)})
	require.Equal(t, 429, r.status)
	require.Equal(t, "global", details(t, r)["dimension"])
	require.NotContains(t, details(t, r), "remaining")
	for _, h := range r.headers {
		require.NotContains(t, h[0], "x-ratelimit", "a shared bucket's level must not leak")
	}
}

const tenantConfig = `{"rate_limiting":{"limits":{"per_user":{"tokens_per_minute":3000}},"budget_division":{"replicas":1}},
  "api_keys":[{"key":"sk-alice","id":"a","user":"alice"},{"key":"sk-bob","id":"b","user":"bob"}]%IDENTITY%}`

func TestAClientCannotPickAnotherTenantsBucketWithAnUndeclaredHeader(t *testing.T) {
	x := newHarness(t, replace(tenantConfig, "%IDENTITY%", ""))
	ok(t, x, call{key: "sk-alice", body: chatBody("hello", 2500), chunks: []string{chatResponse(2500, 0)}})
	// alice's user bucket is nearly empty; bob claims to be alice in headers
	// nobody declared trusted: he is still charged as bob.
	for _, h := range []string{"x-user", "x-user-id", "x-forwarded-user", "x-tokenbudget-user"} {
		ok(t, x, call{key: "sk-bob", body: chatBody("hello", 600), headers: host.Headers{{h, "alice"}},
			chunks: []string{chatResponse(0, 0)}})
	}
	r := x.do(call{key: "sk-alice", body: chatBody("hello", 600)})
	require.Equal(t, 429, r.status)
	require.Equal(t, "user", details(t, r)["token_dimension"])
}

func TestATrustedUserHeaderDeclaredByTheOperatorNamesTheUser(t *testing.T) {
	x := newHarness(t, replace(tenantConfig, "%IDENTITY%", `,"identity":{"trusted_user_header":"x-auth-user"}`))
	ok(t, x, call{key: "sk-alice", body: chatBody("hello", 2500), chunks: []string{chatResponse(2500, 0)}})
	r := x.do(call{key: "sk-bob", body: chatBody("hello", 600), headers: host.Headers{{"x-auth-user", "alice"}}})
	require.Equal(t, 429, r.status, "the auth filter in front said this is alice")
	require.Equal(t, "user", details(t, r)["token_dimension"])
}

func TestEachTierIsHeldToItsOwnLimitsAndKeyOverridesWin(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(must(wasmbuild.Root()), "examples", "configs", "tiers.json"))
	require.NoError(t, err)
	x := newHarness(t, string(raw))
	src := "192.0.2.10:5000" // not whitelisted
	free := ok(t, x, call{key: "sk-free-demo", source: src})
	pro := ok(t, x, call{key: "sk-pro-demo", source: src})
	ent := ok(t, x, call{key: "sk-enterprise-demo", source: src})
	batch := ok(t, x, call{key: "sk-pro-batch", source: src})
	require.Equal(t, "20", free.header("x-ratelimit-requests-minute-limit"))
	require.Equal(t, "100", pro.header("x-ratelimit-requests-minute-limit"))
	require.Equal(t, "1000", ent.header("x-ratelimit-requests-minute-limit"))
	require.Equal(t, "10000", free.header("x-ratelimit-tokens-limit"))
	require.Equal(t, "100000", pro.header("x-ratelimit-tokens-limit"))
	require.Equal(t, "1000000", ent.header("x-ratelimit-tokens-limit"))
	require.Equal(t, "4", batch.header("x-ratelimit-limit"), "the key's own burst")
	require.Equal(t, "20000", batch.header("x-ratelimit-tokens-limit"), "the key's own minute budget")
	require.Equal(t, "1000000", batch.header("x-ratelimit-tokens-day-limit"), "a per-key day budget is not part of the override")
	// Whitelisted peers and bypass keys are exempt from every dimension.
	wl := ok(t, x, call{key: "sk-free-demo", source: "198.51.100.7:5000"})
	require.Empty(t, wl.header("x-ratelimit-tokens-limit"))
}

func TestConcurrencyIsHeldUntilTheStreamIsDoneOnEveryPath(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"concurrent_requests":2}}}}`)
	open := func() (*host.Stream, host.Result) {
		s := x.h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.0.0.1:1"})
		s.RequestHeaders(host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
			{"authorization", "Bearer sk-a"}}, false)
		res := s.RequestBody([]byte(chatBody("hi", 10)), true)
		if res.Action == host.Pause {
			res = s.Wait(context.Background())
		}
		return s, res
	}
	s1, r1 := open()
	s2, r2 := open()
	require.Equal(t, host.Continue, r1.Action)
	require.Equal(t, host.Continue, r2.Action)
	s3, r3 := open()
	require.Equal(t, host.LocalReply, r3.Action)
	require.Equal(t, 429, r3.Local.Status)
	var d map[string]any
	require.NoError(t, json.Unmarshal(r3.Local.Body, &d))
	require.Equal(t, "concurrent_requests", d["error"].(map[string]any)["details"].(map[string]any)["limit_type"])
	s3.Done()
	s1.Done() // cut mid-request: the unit comes back
	s4, r4 := open()
	require.Equal(t, host.Continue, r4.Action)
	s2.ResponseHeaders(host.Headers{{":status", "500"}}, true) // failed upstream
	s2.Done()
	s5, r5 := open()
	require.Equal(t, host.Continue, r5.Action)
	s4.Done()
	s5.Done()
}

func TestModelLimitsRefuseOrClampAndBoundTheContext(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
	  "token_budget":{"default_output_tokens":500},
	  "models":{"gpt-4o":{"max_tokens_per_request":1000,"max_context_length":2000,"on_max_tokens":"%MODE%"}}}`
	x := newHarness(t, replace(cfg, "%MODE%", "refuse"))
	r := x.do(call{key: "sk-a", body: chatBody("hello", 2000)})
	require.Equal(t, 400, r.status)
	require.Equal(t, "max_tokens_exceeded", r.json(t)["error"].(map[string]any)["code"])
	r = x.do(call{key: "sk-a", body: chatBody(repeat("lorem ipsum ", 2000), 10)})
	require.Equal(t, 400, r.status)
	require.Equal(t, "context_length_exceeded", r.json(t)["error"].(map[string]any)["code"])

	y := newHarness(t, replace(cfg, "%MODE%", "clamp"))
	r = ok(t, y, call{key: "sk-a", body: chatBody("hello", 2000)})
	var up map[string]any
	require.NoError(t, json.Unmarshal(r.upstreamBody, &up))
	require.Equal(t, float64(1000), up["max_tokens"], "the backend is told the clamped ceiling")
	require.Less(t, reservedBy(t, r), int64(1100), "and the hold reserves the clamped ceiling")

	// A repeated ceiling is ambiguous (backends read the last copy): refused.
	dup := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":10,"max_tokens":99999}`
	r = y.do(call{key: "sk-a", body: dup})
	require.Equal(t, 400, r.status)
	require.Equal(t, "duplicate_field", r.json(t)["error"].(map[string]any)["code"])
}

// Past max_buckets a new key's bucket takes a reusable slot and its budget
// holds; only once every slot it may use holds a bucket that is not whole
// does a new key fail open, counted.
func TestABucketMapAtItsCeilingFailsOpenAndIsCountedOnlyWhenNoSlotIsFree(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"max_buckets":2,"limits":{"per_api_key":{"tokens_per_minute":1000}},
		"budget_division":{"replicas":1}}}`)
	ok(t, x, call{key: "sk-1"})
	ok(t, x, call{key: "sk-2"})
	r := x.do(call{key: "sk-3", body: chatBody("hello", 50000)})
	require.Equal(t, 429, r.status, "sk-3's budget is in force in a reusable slot")
	ok(t, x, call{key: "sk-3"})
	ok(t, x, call{key: "sk-4"}) // the map's two slots now hold buckets that spent: not whole
	require.Zero(t, x.metric(metrics.Skipped, metrics.LabelDimension, "token_budget"))
	r = ok(t, x, call{key: "sk-5", body: chatBody("hello", 50000)})
	require.Empty(t, r.header("x-ratelimit-tokens-limit"))
	require.Equal(t, int64(1), x.metric(metrics.Skipped, metrics.LabelDimension, "token_budget"))
}

func TestDivisionAndAPushedZeroShare(t *testing.T) {
	x := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":10000}},"budget_division":{"replicas":3}}}`)
	require.Equal(t, "3333", ok(t, x, call{key: "sk-a"}).header("x-ratelimit-tokens-limit"))
	z := newHarness(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":10000}},"budget_division":{"replicas":3}},
		"deployment_token_budget":{"share_tokens_per_minute":0}}`)
	r := z.do(call{key: "sk-a", body: chatBody("hello", 10)})
	require.Equal(t, 429, r.status, "a pushed share of zero is an authoritative zero allowance, not unlimited")
}

func TestWhitelistAndBypassKeysExemptEveryDimension(t *testing.T) {
	cfg := `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1},"per_api_key":{"requests_per_second":1,"burst_capacity":1}},
	  "whitelist":["10.9.0.0/16"],"bypass_keys":["sk-vip"],"budget_division":{"replicas":1}}}`
	x := newHarness(t, cfg)
	for i := 0; i < 3; i++ {
		ok(t, x, call{key: "sk-a", source: "10.9.1.1:1", body: chatBody("hello", 5000)})
		ok(t, x, call{key: "sk-vip", source: "10.1.1.1:1", body: chatBody("hello", 5000)})
	}
	require.Equal(t, 429, x.do(call{key: "sk-a", source: "10.1.1.1:1", body: chatBody("hello", 5000)}).status)
}

func TestATrustedMetadataIdentityNamesTheUserAndHeadersCannotOverrideIt(t *testing.T) {
	cfg := replace(tenantConfig, "%IDENTITY%", `,"identity":{"trusted_user_metadata":["metadata","filter_metadata","auth","user"]}`)
	x := newHarness(t, cfg)
	ok(t, x, call{key: "sk-alice", body: chatBody("hello", 2500), chunks: []string{chatResponse(2500, 0)}})
	run := func(user string, hdr host.Headers) reply {
		s := x.h.NewStream(host.StreamInfo{Worker: -1, SourceAddress: "10.0.0.1:1",
			Properties: map[string][]byte{"metadata\x00filter_metadata\x00auth\x00user": []byte(user)}})
		defer s.Done()
		hs := append(host.Headers{{":method", "POST"}, {":path", "/v1/chat/completions"}, {":authority", "llm"},
			{"authorization", "Bearer sk-bob"}}, hdr...)
		s.RequestHeaders(hs, false)
		res := s.RequestBody([]byte(chatBody("hello", 600)), true)
		if res.Action == host.Pause {
			res = s.Wait(context.Background())
		}
		if res.Action == host.LocalReply {
			return reply{status: res.Local.Status, body: res.Local.Body}
		}
		return reply{status: 200}
	}
	r := run("alice", nil)
	require.Equal(t, 429, r.status, "the auth filter's metadata says this is alice")
	require.Equal(t, "user", details(t, r)["token_dimension"])
	require.Equal(t, 200, run("carol", host.Headers{{"x-user", "alice"}}).status, "a header cannot override the metadata")
}
