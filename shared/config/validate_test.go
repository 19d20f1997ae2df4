package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateRejectsValuesThatCannotWork(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	tests := []struct {
		name, raw, want string
	}{
		{"unknown storage", `{"rate_limiting":{"storage":"etcd"}}`, `rate_limiting.storage: must be "memory" or "redis"`},
		{"redis storage needs a cluster", `{"rate_limiting":{"storage":"redis"}}`, `rate_limiting.redis.cluster: is required`},
		{"redis storage with empty cluster", `{"rate_limiting":{"storage":"redis","redis":{"token":"t"}}}`, `rate_limiting.redis.cluster: is required`},
		{"negative timeout", `{"rate_limiting":{"redis":{"cluster":"c","timeout_ms":-1}}}`, `rate_limiting.redis.timeout_ms: must be greater than 0`},
		{"zero timeout would mean no timeout in Envoy", `{"rate_limiting":{"redis":{"cluster":"c","timeout_ms":0}}}`, `rate_limiting.redis.timeout_ms: must be greater than 0`},
		{"negative burst", `{"rate_limiting":{"limits":{"global":{"burst_capacity":-1}}}}`, `rate_limiting.limits.global.burst_capacity: must not be negative`},
		{"negative rate", `{"rate_limiting":{"limits":{"per_client":{"requests_per_second":-0.5}}}}`, `rate_limiting.limits.per_client.requests_per_second: must not be negative`},
		{"negative per_model budget", `{"rate_limiting":{"limits":{"per_model":{"m":{"tokens_per_day":-3}}}}}`, `rate_limiting.limits.per_model.m.tokens_per_day: must not be negative`},
		{"negative per_backend", `{"rate_limiting":{"limits":{"per_backend":{"concurrent_requests":-3}}}}`, `rate_limiting.limits.per_backend.concurrent_requests: must not be negative`},
		{"negative tier field", `{"rate_limiting":{"tier_overrides":{"pro":{"per_api_key":{"tokens_per_minute":-1}}}}}`, `rate_limiting.tier_overrides.pro.per_api_key.tokens_per_minute: must not be negative`},
		{"empty tier name", `{"rate_limiting":{"tier_overrides":{"":{}}}}`, `tier name must not be empty`},
		{"bad CIDR", `{"rate_limiting":{"whitelist":["10.0.0.0/8","10.0.0.0/33"]}}`, `rate_limiting.whitelist[1]: "10.0.0.0/33" is not a CIDR`},
		{"hostname is not a CIDR", `{"rate_limiting":{"whitelist":["localhost"]}}`, `rate_limiting.whitelist[0]`},
		{"bad bypass hash", `{"rate_limiting":{"bypass_keys":["sha256:abc"]}}`, `rate_limiting.bypass_keys[0]: sha256: form needs exactly 64 hex digits`},
		{"replicas below one", `{"rate_limiting":{"budget_division":{"replicas":0}}}`, `rate_limiting.budget_division.replicas: must be at least 1`},
		{"replicas missing", `{"rate_limiting":{"budget_division":{}}}`, `rate_limiting.budget_division.replicas: is required`},
		{"max_buckets zero", `{"rate_limiting":{"max_buckets":0}}`, `rate_limiting.max_buckets: must be greater than 0`},
		{"empty api key", `{"api_keys":[{"key":""}]}`, `api_keys[0].key: key is empty`},
		{"duplicate raw keys", `{"api_keys":[{"key":"a"},{"key":"b"},{"key":"a"}]}`, `api_keys[2].key: duplicates api_keys[0].key`},
		{"raw and hashed spelling of one key", `{"api_keys":[{"key":"sk-1"},{"key":"sha256:` + sha("sk-1") + `"}]}`, `api_keys[1].key: duplicates api_keys[0].key`},
		{"duplicate ids", `{"api_keys":[{"key":"a","id":"x"},{"key":"b","id":"x"}]}`, `api_keys[1].id: duplicates api_keys[0].id`},
		{"negative key rate", `{"api_keys":[{"key":"sha256:` + h + `","rate_limit":-1}]}`, `api_keys[0].rate_limit: must not be negative`},
		{"negative key burst", `{"api_keys":[{"key":"a","rate_limit_burst":-1}]}`, `api_keys[0].rate_limit_burst: must not be negative`},
		{"negative key tpm", `{"api_keys":[{"key":"a","rate_limit_tokens_per_minute":-1}]}`, `api_keys[0].rate_limit_tokens_per_minute: must not be negative`},
		{"negative share", `{"deployment_token_budget":{"share_tokens_per_minute":-1}}`, `deployment_token_budget.share_tokens_per_minute: must not be negative`},
		{"empty api key header", `{"identity":{"api_key_headers":[""]}}`, `identity.api_key_headers[0]: header name must not be empty`},
		{"bad header name", `{"identity":{"trusted_user_header":"x user"}}`, `identity.trusted_user_header: "x user" is not a valid header name`},
		{"on_max_tokens typo", `{"models":{"m":{"on_max_tokens":"truncate"}}}`, `models.m.on_max_tokens: must be "refuse" or "clamp"`},
		{"model limit below the output default refuses every request", `{"models":{"m":{"max_tokens_per_request":1000}}}`, `models.m.max_tokens_per_request: is below token_budget.default_output_tokens (4096)`},
		{"context below output ceiling", `{"models":{"m":{"max_tokens_per_request":8192,"max_context_length":4096}}}`, `models.m.max_context_length: is below max_tokens_per_request`},
		{"conflicting model concurrency", `{"models":{"m":{"concurrent_requests":2}},"rate_limiting":{"limits":{"per_model":{"m":{"concurrent_requests":3}}}}}`, `models.m.concurrent_requests: conflicts`},
		{"max body zero", `{"token_budget":{"max_body_bytes":0}}`, `token_budget.max_body_bytes: must be greater than 0`},
		{"default output zero", `{"token_budget":{"default_output_tokens":0}}`, `token_budget.default_output_tokens: must be greater than 0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Contains(t, loadErr(t, tc.raw), tc.want)
		})
	}
}

func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`{"rate_limiting":{"storage":"x","max_buckets":0,"whitelist":["bad"]},"token_budget":{"max_body_bytes":-1}}`))
	require.NoError(t, err)
	err = c.Validate()
	require.Error(t, err)
	require.Len(t, strings.Split(err.Error(), "\n"), 4)
}

func TestModelLimitBelowOutputDefaultIsAcceptedWhenClamping(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"models":{"m":{"max_tokens_per_request":1000,"on_max_tokens":"clamp"}}}`)
	m, ok := rt.Model("m")
	require.True(t, ok)
	require.True(t, m.Clamp)
	require.Equal(t, int64(1000), m.MaxTokensPerRequest)
	// The check follows a lowered output default too.
	mustLoad(t, `{"models":{"m":{"max_tokens_per_request":1000}},"token_budget":{"default_output_tokens":1000}}`)
}

func TestWhitelistAcceptsBareAddressesAndMappedPrefixes(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"whitelist":["192.0.2.7","::ffff:10.0.0.0/104","2001:db8::/32"]}}`)
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"192.0.2.7", true}, {"192.0.2.8", false}, {"10.1.2.3", true}, {"::ffff:10.9.9.9", true},
		{"11.0.0.1", false}, {"2001:db8::1", true}, {"2001:db9::1", false},
	} {
		require.Equal(t, tc.want, rt.Exempt(mustAddr(t, tc.addr), ""), tc.addr)
	}
}

func TestTrustedIdentityMetadataMustBeAPathAFilterInFrontWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{`["metadata","filter_metadata","envoy.filters.http.jwt_authn","sub"]`, true},
		{`["filter_state","auth.user"]`, true},
		{`["request","headers","x-user"]`, false},
		{`["metadata"]`, false},
		{`["metadata",""]`, false},
	} {
		_, _, err := Load([]byte(`{"identity":{"trusted_user_metadata":` + tc.path + `}}`))
		if tc.ok {
			require.NoError(t, err, tc.path)
		} else {
			require.ErrorContains(t, err, "identity.trusted_user_metadata", tc.path)
		}
	}
	rt, _, err := Load([]byte(`{"identity":{"trusted_team_metadata":["metadata","filter_metadata","auth","team"]}}`))
	require.NoError(t, err)
	require.Equal(t, []string{"metadata", "filter_metadata", "auth", "team"}, rt.TrustedTeamMetadata)
}

func TestTheSharedstoreTokenComesFromTheConfigOrTheVMEnvironmentNotBoth(t *testing.T) {
	t.Parallel()
	redis := func(extra string) string {
		return `{"rate_limiting":{"storage":"redis","limits":{"global":{"tokens_per_minute":100}},"redis":{"cluster":"sharedstore"` + extra + `}}}`
	}
	cases := []struct {
		name, config, err string
	}{
		{"the token written", redis(`,"token":"t0ken"`), ""},
		{"a variable named", redis(`,"token_env":"TOKENBUDGET_SHAREDSTORE_TOKEN"`), ""},
		{"both", redis(`,"token":"t0ken","token_env":"TOKENBUDGET_SHAREDSTORE_TOKEN"`), "rate_limiting.redis.token_env: set token or token_env, not both"},
		{"not a name", redis(`,"token_env":"MY TOKEN"`), `rate_limiting.redis.token_env: must be an environment variable name`},
		{"a leading digit", redis(`,"token_env":"1TOKEN"`), `must be an environment variable name`},
		{"an assignment", redis(`,"token_env":"TOKEN=x"`), `must be an environment variable name`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Load([]byte(c.config))
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.err)
		})
	}
}

func TestTheTokenEnvIsReadFromTheVMEnvironmentOrTheConfigIsRefused(t *testing.T) {
	t.Parallel()
	rt, _, err := Load([]byte(`{"rate_limiting":{"storage":"redis","limits":{"global":{"tokens_per_minute":100}},` +
		`"redis":{"cluster":"sharedstore","token_env":"SHAREDSTORE_TOKEN"}}}`))
	require.NoError(t, err)
	require.Empty(t, rt.Redis.Token, "nothing is read at parse time")
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cases := []struct {
		name   string
		getenv func(string) (string, bool)
		token  string
		err    string
	}{
		{"set", env(map[string]string{"SHAREDSTORE_TOKEN": "s3cret"}), "s3cret", ""},
		{"missing", env(map[string]string{"OTHER": "x"}), "",
			"rate_limiting.redis.token_env: the VM has no environment variable SHAREDSTORE_TOKEN; give it with Envoy's vm_config.environment_variables"},
		{"empty", env(map[string]string{"SHAREDSTORE_TOKEN": ""}), "", "SHAREDSTORE_TOKEN is empty"},
		{"no environment at all", nil, "", "this host gives the VM no environment variables"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := *rt
			err := r.ResolveEnv(c.getenv)
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				require.Empty(t, r.Redis.Token)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.token, r.Redis.Token)
		})
	}
	plain, _, err := Load([]byte(`{"rate_limiting":{"storage":"redis","redis":{"cluster":"c","token":"t"}}}`))
	require.NoError(t, err)
	require.NoError(t, plain.ResolveEnv(nil), "a config that names no variable needs no environment")
	require.Equal(t, "t", plain.Redis.Token)
}
