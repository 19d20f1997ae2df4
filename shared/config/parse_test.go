package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUnknownFieldsAreErrorsAtEveryDepthWithTheirPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, want string
	}{
		{"top level", `{"rate_limit":{}}`, `unknown field "rate_limit"`},
		{"rate_limiting", `{"rate_limiting":{"storag":"memory"}}`, `rate_limiting: unknown field "storag" (did you mean "storage"?)`},
		{"limits dimension", `{"rate_limiting":{"limits":{"per_key":{}}}}`, `rate_limiting.limits: unknown field "per_key"`},
		{"settings field", `{"rate_limiting":{"limits":{"global":{"tokens_per_minut":1}}}}`, `rate_limiting.limits.global: unknown field "tokens_per_minut" (did you mean "tokens_per_minute"?)`},
		{"per_model entry", `{"rate_limiting":{"limits":{"per_model":{"gpt-4.1":{"tpm":1}}}}}`, `rate_limiting.limits.per_model["gpt-4.1"]: unknown field "tpm"`},
		{"tier override", `{"rate_limiting":{"tier_overrides":{"pro":{"per_user":{}}}}}`, `rate_limiting.tier_overrides.pro: unknown field "per_user"`},
		{"api key", `{"api_keys":[{"key":"k","rate_limit_tpm":1}]}`, `api_keys[0]: unknown field "rate_limit_tpm"`},
		{"redis", `{"rate_limiting":{"redis":{"cluster":"c","timeout":5}}}`, `rate_limiting.redis: unknown field "timeout"`},
		{"deployment budget", `{"deployment_token_budget":{"share_tokens_per_hour":1}}`, `deployment_token_budget: unknown field "share_tokens_per_hour"`},
		{"identity", `{"identity":{"user_header":"x"}}`, `identity: unknown field "user_header"`},
		{"models", `{"models":{"m":{"max_tokens":1}}}`, `models.m: unknown field "max_tokens"`},
		{"token_budget", `{"token_budget":{"max_body":1}}`, `token_budget: unknown field "max_body"`},
		{"field names match case exactly", `{"rate_limiting":{"Storage":"memory"}}`, `rate_limiting: unknown field "Storage"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.raw))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseReportsEveryShapeProblemAtOnce(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"rate_limiting":{"storage":5,"limits":{"global":{"burst_capacity":1.5,"x":1}}},"api_keys":{"key":"k"}}`))
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"rate_limiting.storage: must be a string",
		"rate_limiting.limits.global.burst_capacity: must be a whole number",
		`rate_limiting.limits.global: unknown field "x"`,
		"api_keys: must be an array",
	} {
		require.Contains(t, msg, want)
	}
}

func TestParseRejectsNonObjectsAndTrailingData(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`[]`, `"x"`, `5`, `null`, `{} {}`, `{"a":`, `{"rate_limiting":{}}x`} {
		t.Run(raw, func(t *testing.T) {
			_, err := Parse([]byte(raw))
			require.Error(t, err)
		})
	}
}

func TestEmptyConfigLoadsWithDefaultsAndNoLimits(t *testing.T) {
	for _, raw := range []string{``, `  `, `{}`} {
		rt, warnings := mustLoad(t, raw)
		require.Len(t, warnings, 1)
		require.Contains(t, warnings[0], "this config limits nothing", "it loads, and says it meters only")
		require.Equal(t, StorageMemory, rt.Storage)
		require.Equal(t, DefaultMaxBuckets, rt.MaxBuckets)
		require.Equal(t, []string{"authorization", "x-api-key"}, rt.APIKeyHeaders)
		require.Equal(t, int64(1<<20), rt.MaxBodyBytes)
		require.Equal(t, int64(4096), rt.DefaultOutputTokens)
		require.True(t, rt.InjectStreamUsage)
		require.False(t, rt.ReleaseCutStreams)
		require.False(t, rt.SkipUncoveredOverage)
		require.False(t, rt.RefuseMissingKeys)
		require.False(t, rt.RefuseUnknownKeys)
		require.Equal(t, "x-cache", rt.CacheHitHeader)
		require.Equal(t, "HIT", rt.CacheHitValue)
		require.Equal(t, int64(DefaultRedisTimeoutMS), rt.Redis.TimeoutMS)
		require.True(t, rt.Redis.FallbackToMemory)
		require.False(t, rt.HasTokenBudget())
		require.False(t, rt.HasRequestLimits())
		for _, r := range []Rules{rt.Global, rt.Client, rt.User, rt.Team, rt.APIKeyDefault} {
			require.Equal(t, TokenBudget{Minute: unlimited, Day: unlimited}, r.Tokens)
			require.False(t, r.Requests.Any())
		}
	}
}

func TestNullMeansAbsent(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"max_buckets":null,"limits":{"global":null}},"api_keys":null}`)
	require.Equal(t, DefaultMaxBuckets, rt.MaxBuckets)
	require.False(t, rt.Global.Tokens.Any())
}

func TestExplicitSettingsOverrideDefaultsAndHeadersAreLowerCased(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{
		"rate_limiting":{"storage":"redis","max_buckets":"500","redis":{"cluster":"store","token":"t","timeout_ms":20,"fallback_to_memory":false}},
		"identity":{"api_key_headers":["X-Key"],"trusted_user_header":"X-User","trusted_team_header":"X-Team","model_header":"X-Model"},
		"token_budget":{"max_body_bytes":2048,"default_output_tokens":100,"inject_stream_usage":false,"on_cut_stream":"release","on_uncovered_overage":"skip","cache_hit_header":"X-Cache-Status","cache_hit_value":"hit"}}`)
	require.Equal(t, StorageRedis, rt.Storage)
	require.Equal(t, 500, rt.MaxBuckets)
	require.Equal(t, RedisSettings{Cluster: "store", Authority: "store", Token: "t", TimeoutMS: 20, FallbackToMemory: false}, rt.Redis)
	require.Equal(t, []string{"x-key"}, rt.APIKeyHeaders)
	require.Equal(t, "x-user", rt.TrustedUserHeader)
	require.Equal(t, "x-team", rt.TrustedTeamHeader)
	require.Equal(t, "x-model", rt.ModelHeader)
	require.Equal(t, int64(2048), rt.MaxBodyBytes)
	require.Equal(t, int64(100), rt.DefaultOutputTokens)
	require.False(t, rt.InjectStreamUsage)
	require.True(t, rt.ReleaseCutStreams)
	require.True(t, rt.SkipUncoveredOverage)
	require.Equal(t, "x-cache-status", rt.CacheHitHeader)
	require.Equal(t, "hit", rt.CacheHitValue)
}

func FuzzLoadNeverPanics(f *testing.F) {
	f.Add(`{"rate_limiting":{"limits":{"global":{"tokens_per_minute":"1.0"}}}}`)
	f.Add(`{"api_keys":[{"key":"sha256:` + strings.Repeat("a", 64) + `","tier":"x"}],"rate_limiting":{"whitelist":["::ffff:10.0.0.0/104"]}}`)
	f.Add(`{"models":{"m":{"max_tokens_per_request":1,"on_max_tokens":"clamp"}},"deployment_token_budget":{"share_tokens_per_day":0}}`)
	f.Add(spendConfig)
	f.Add(`{"pricing":{"m":{"input":"1e-9","output":0,"above_input_tokens":1,"tier":{"input":1,"output":2}}}}`)
	f.Fuzz(func(t *testing.T, raw string) {
		rt, _, err := Load([]byte(raw))
		if err == nil {
			_ = rt.APIKeyRules(rt.Key("x"))
			p := rt.SpendPolicy(rt.Key("x"), "u", "t")
			_ = p.Any()
			_, _ = rt.Price("m")
		}
	})
}
