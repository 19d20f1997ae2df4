package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const tieredConfig = `{
	"rate_limiting":{"limits":{"per_api_key":{"requests_per_second":5,"burst_capacity":10,"requests_per_minute":100,"requests_per_day":1000,"tokens_per_minute":20000,"tokens_per_day":1000000,"concurrent_requests":4}},
	"tier_overrides":{"free":{"per_api_key":{"requests_per_second":1,"tokens_per_minute":1000}},"open":{"per_api_key":{"requests_per_second":0,"tokens_per_minute":0}}}},
	"api_keys":[
		{"key":"plain","id":"p","user":"u","team":"t"},
		{"key":"free","tier":"free"},
		{"key":"free-own","tier":"free","rate_limit":3,"rate_limit_burst":7,"rate_limit_tokens_per_minute":500},
		{"key":"no-rate","rate_limit":0},
		{"key":"no-tpm","rate_limit_tokens_per_minute":0},
		{"key":"burst-only","rate_limit_burst":50},
		{"key":"small-burst","rate_limit":12.5,"rate_limit_burst":1},
		{"key":"open","tier":"open"},
		{"key":"ghost-tier","tier":"nope"}
	]}`

func TestKeyPrecedenceIsOwnFieldsThenTierThenDefault(t *testing.T) {
	rt, _ := mustLoad(t, tieredConfig)
	rules := func(raw string) Rules { return *rt.APIKeyRules(rt.Key(sha(raw))) }
	def := rt.APIKeyDefault
	require.Equal(t, RequestLimits{PerSecond: 5, Burst: 10, PerMinute: 100, PerDay: 1000, Concurrent: 4}, def.Requests)
	require.Equal(t, TokenBudget{Minute: limited(20000), Day: limited(1000000)}, def.Tokens)

	tests := []struct {
		key      string
		requests RequestLimits
		tokens   TokenBudget
	}{
		{"plain", def.Requests, def.Tokens},
		{"free", RequestLimits{PerSecond: 1, Burst: 10, PerMinute: 100, PerDay: 1000, Concurrent: 4}, TokenBudget{Minute: limited(1000), Day: limited(1000000)}},
		{"free-own", RequestLimits{PerSecond: 3, Burst: 7, PerMinute: 100, PerDay: 1000, Concurrent: 4}, TokenBudget{Minute: limited(500), Day: limited(1000000)}},
		{"no-rate", RequestLimits{PerSecond: 0, Burst: 0, PerMinute: 100, PerDay: 1000, Concurrent: 4}, def.Tokens},
		{"no-tpm", def.Requests, TokenBudget{Minute: unlimited, Day: limited(1000000)}},
		{"burst-only", RequestLimits{PerSecond: 5, Burst: 50, PerMinute: 100, PerDay: 1000, Concurrent: 4}, def.Tokens},
		{"small-burst", RequestLimits{PerSecond: 12.5, Burst: 13, PerMinute: 100, PerDay: 1000, Concurrent: 4}, def.Tokens},
		{"open", RequestLimits{PerSecond: 0, Burst: 0, PerMinute: 100, PerDay: 1000, Concurrent: 4}, TokenBudget{Minute: unlimited, Day: limited(1000000)}},
		{"ghost-tier", def.Requests, def.Tokens},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			r := rules(tc.key)
			require.Equal(t, tc.requests, r.Requests)
			require.Equal(t, tc.tokens, r.Tokens)
			if tc.requests == def.Requests && tc.tokens == def.Tokens {
				require.Equal(t, def.Version, r.Version)
			} else {
				require.NotEqual(t, def.Version, r.Version, "an override must start its own buckets")
			}
		})
	}
}

func TestKeyInfoComesFromAPIKeysAndUnknownKeysGetTheDefault(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, tieredConfig)
	k := rt.Key(sha("plain"))
	require.Equal(t, KeyInfo{Hash: sha("plain"), ID: "p", User: "u", Team: "t", Known: true}, k)
	u := rt.Key(sha("stranger"))
	require.Equal(t, KeyInfo{Hash: sha("stranger")}, u)
	require.Equal(t, rt.APIKeyDefault, *rt.APIKeyRules(u))
	// A forged KeyInfo with a tier does not buy the tier: only known keys do.
	require.Equal(t, rt.APIKeyDefault, *rt.APIKeyRules(KeyInfo{Hash: sha("stranger"), Tier: "free"}))
}

func TestBurstIsRaisedToOneSecondOfTheRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rps       string
		burst     string
		wantBurst int64
	}{
		{"5", "10", 10},
		{"5", "2", 5},
		{"5", "0", 5},
		{"0.5", "0", 1},
		{"2.2", "", 3},
		{"0", "10", 0}, // no rate: nothing to burst
	}
	for _, tc := range tests {
		t.Run(tc.rps+"/"+tc.burst, func(t *testing.T) {
			b := ""
			if tc.burst != "" {
				b = `,"burst_capacity":` + tc.burst
			}
			rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"per_client":{"requests_per_second":`+tc.rps+b+`}}}}`)
			require.Equal(t, tc.wantBurst, rt.Client.Requests.Burst)
		})
	}
}

func TestRawKeysAreNotKeptInTheRuntime(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"api_keys":[{"key":"sk-very-secret-1","rate_limit":1}],"rate_limiting":{"bypass_keys":["sk-very-secret-2"]}}`)
	dump := fmt.Sprintf("%#v %#v %#v", *rt, rt.keys, rt.keyRules)
	require.False(t, strings.Contains(dump, "sk-very-secret"), "raw key leaked into the runtime")
	require.True(t, rt.Key(sha("sk-very-secret-1")).Known)
	require.True(t, rt.Exempt(mustAddr(t, "1.2.3.4"), sha("sk-very-secret-2")))
}

func TestHashedConfigKeysMatchTheirRawHeaderValue(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"api_keys":[{"key":"SHA256:`+strings.ToUpper(sha("sk-x"))+`","id":"x"}]}`)
	require.Equal(t, "x", rt.Key(sha("sk-x")).ID)
}
