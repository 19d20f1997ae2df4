package config

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

func usd(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		panic(err)
	}
	return a
}

func lim(s string) spend.Limit { return spend.Limit{Amount: usd(s), Set: true} }

// spendConfig has every spend source: a team, users, keys with and without
// ids and tiers, and the tier defaults.
const spendConfig = `{
  "rate_limiting": {"tier_overrides": {
    "pro":  {"cost_per_day_usd": 50, "cost_per_month_usd": "500.00"},
    "free": {"cost_per_day_usd": "1"}
  }},
  "api_keys": [
    {"key": "sk-own", "id": "key-own", "team": "acme", "user": "ann", "tier": "pro", "spend_limit_day_usd": "5"},
    {"key": "sk-tier", "tier": "pro", "team": "acme"},
    {"key": "sk-zero", "id": "key-zero", "tier": "free", "spend_limit_month_usd": 0},
    {"key": "sk-plain", "id": "key-plain", "user": "bob"}
  ],
  "spend_limits": {
    "teams": {"acme": {"month_usd": 200}},
    "users": {"ann": {"day_usd": "2.5e1"}, "bob": {"month_usd": "0.15"}}
  },
  "pricing": {"default": {"input": 1, "output": 2}}
}`

func TestSpendPolicyResolvesEveryScopeForARequest(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, spendConfig)
	require.True(t, rt.HasSpendLimits())
	key := func(raw string) KeyInfo { return rt.Key(sha(raw)) }
	tests := []struct {
		name       string
		k          KeyInfo
		user, team string
		want       spend.Policy
	}{
		{"a key's own day limit wins over its tier's, its tier's month still applies", key("sk-own"), "ann", "acme", spend.Policy{
			Team: "acme", APIKey: "key-own", User: "ann",
			Limits: [spend.NumSlots]spend.Limit{spend.TeamMonth: lim("200"), spend.KeyDay: lim("5"), spend.KeyMonth: lim("500"), spend.UserDay: lim("25")},
		}},
		{"a key without an id is counted under its hash and gets its tier's limits", key("sk-tier"), "", "acme", spend.Policy{
			Team: "acme", APIKey: sha("sk-tier"),
			Limits: [spend.NumSlots]spend.Limit{spend.TeamMonth: lim("200"), spend.KeyDay: lim("50"), spend.KeyMonth: lim("500")},
		}},
		{"a limit of 0 is kept apart from no limit", key("sk-zero"), "", "", spend.Policy{
			APIKey: "key-zero",
			Limits: [spend.NumSlots]spend.Limit{spend.KeyDay: lim("1"), spend.KeyMonth: {Set: true}},
		}},
		{"a key without limits has only its user's", key("sk-plain"), "bob", "", spend.Policy{
			APIKey: "key-plain", User: "bob",
			Limits: [spend.NumSlots]spend.Limit{spend.UserMonth: lim("0.15")},
		}},
		{"an unknown key has no key limits, its trusted team still counts", key("sk-unknown"), "", "acme", spend.Policy{
			Team: "acme", APIKey: sha("sk-unknown"),
			Limits: [spend.NumSlots]spend.Limit{spend.TeamMonth: lim("200")},
		}},
		{"a request without a key or identity has no limit", KeyInfo{}, "", "", spend.Policy{}},
		{"identities without a configured limit carry none", KeyInfo{}, "carol", "other", spend.Policy{User: "carol", Team: "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := rt.SpendPolicy(tt.k, tt.user, tt.team)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestNoSpendLimitsMeansNoPolicyAnywhere(t *testing.T) {
	t.Parallel()
	rt, w := mustLoad(t, `{"api_keys":[{"key":"k","team":"t"}],"pricing":{"m":{"input":1,"output":1}}}`)
	require.False(t, rt.HasSpendLimits())
	p := rt.SpendPolicy(rt.Key(sha("k")), "u", "t")
	require.False(t, p.Any())
	for _, s := range w {
		require.NotContains(t, s, "spend", "pricing alone warns of nothing")
	}
}

func TestPricingFillsEveryAbsentRateFromItsFallback(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"pricing":{
	  "claude": {"input": "3", "cached_input": 0.30, "cache_write": "3.75", "cache_write_1h": 6, "output": 15,
	             "above_input_tokens": "200000", "tier": {"input": 6, "output": "22.5", "cache_write": 7.5}},
	  "gpt": {"input": "2.5e0", "output": 10, "per_request": "0.0001"},
	  "default": {"input": 0, "output": 0.0375}
	}}`)
	e, ok := rt.Price("claude")
	require.True(t, ok)
	require.Equal(t, pricing.Entry{
		Base:             pricing.Rates{Input: 3e9, CachedInput: 3e8, CacheWrite: 3.75e9, CacheWrite1h: 6e9, Output: 15e9},
		AboveInputTokens: 200_000,
		// Absent tier rates fall back inside the tier: cached_input to the
		// tier's input, cache_write_1h to the tier's cache_write.
		Tier: pricing.Rates{Input: 6e9, CachedInput: 6e9, CacheWrite: 7.5e9, CacheWrite1h: 7.5e9, Output: 22.5e9},
	}, e)
	e, ok = rt.Price("gpt")
	require.True(t, ok)
	require.Equal(t, pricing.Entry{
		Base:       pricing.Rates{Input: 2.5e9, CachedInput: 2.5e9, CacheWrite: 2.5e9, CacheWrite1h: 2.5e9, Output: 10e9},
		PerRequest: 100_000,
	}, e)
	e, ok = rt.Price("anything-else")
	require.True(t, ok, "the default prices unknown models")
	require.Equal(t, money.Price(37_500_000), e.Base.Output)
	require.True(t, rt.Prices().HasDefault())

	rt, _ = mustLoad(t, `{"pricing":{"gpt":{"input":1,"output":1}}}`)
	_, ok = rt.Price("claude")
	require.False(t, ok, "no entry and no default: not priced")
	rt, _ = mustLoad(t, `{}`)
	_, ok = rt.Price("gpt")
	require.False(t, ok)
	require.Nil(t, rt.Prices())
}

// The whole path the filter takes at settlement: the backend's usage block,
// split by kind, priced at the configured entry, to the nano-dollar.
func TestAnAnthropicUsageBlockIsPricedAtTheConfiguredRates(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"pricing":{"claude-sonnet-4-5":{"input":3,"cached_input":0.3,"cache_write":3.75,"cache_write_1h":6,"output":15}}}`)
	u, ok := usage.FromJSON(usage.AnthropicMessages, []byte(`{"usage":{"input_tokens":2095,"cache_creation_input_tokens":2051,"cache_read_input_tokens":10000,"cache_creation":{"ephemeral_5m_input_tokens":51,"ephemeral_1h_input_tokens":2000},"output_tokens":503}}`))
	require.True(t, ok)
	e, ok := rt.Price("claude-sonnet-4-5")
	require.True(t, ok)
	// 2095×3 + 10000×0.3 + 51×3.75 + 2000×6 + 503×15 = 29,021.25 µUSD
	require.Equal(t, money.Amount(29_021_250), pricing.Cost(u.Kinds(), e))
}

func TestSpendAndPricingErrorsNameTheirPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw, want string
	}{
		{"negative limit", `{"api_keys":[{"key":"k","spend_limit_day_usd":-1}]}`, `api_keys[0].spend_limit_day_usd: must not be negative`},
		{"limit finer than a nano-dollar", `{"api_keys":[{"key":"k","team":"t"}],"spend_limits":{"teams":{"t":{"month_usd":"0.0000000001"}}}}`, `spend_limits.teams.t.month_usd: has more than 9 decimal places`},
		{"limit too large", `{"rate_limiting":{"tier_overrides":{"pro":{"cost_per_month_usd":1e10}}}}`, `rate_limiting.tier_overrides.pro.cost_per_month_usd: is too large`},
		{"limit not a number", `{"api_keys":[{"key":"k","user":"u"}],"spend_limits":{"users":{"u":{"day_usd":"$5"}}}}`, `spend_limits.users.u.day_usd: must be a non-negative decimal USD amount`},
		{"limit a boolean", `{"api_keys":[{"key":"k","spend_limit_month_usd":true}]}`, `api_keys[0].spend_limit_month_usd: must be a non-negative decimal USD amount`},
		{"unknown spend field", `{"spend_limits":{"teams":{"t":{"day_usd":1}}}}`, `spend_limits.teams.t: unknown field "day_usd"`},
		{"team limits without any team source", `{"api_keys":[{"key":"k","user":"u"}],"spend_limits":{"teams":{"t":{"month_usd":1}}}}`, `spend_limits.teams: no request can carry a team`},
		{"user limits without any user source", `{"api_keys":[{"key":"k","team":"t"}],"spend_limits":{"users":{"u":{"day_usd":1}}}}`, `spend_limits.users: no request can carry a user`},
		{"empty team name", `{"identity":{"trusted_team_header":"x-team"},"spend_limits":{"teams":{"":{"month_usd":1}}}}`, `spend_limits.teams[""]: team name must not be empty`},
		{"empty user name", `{"identity":{"trusted_user_header":"x-user"},"spend_limits":{"users":{"":{"month_usd":1}}}}`, `spend_limits.users[""]: user name must not be empty`},
		{"price without input", `{"pricing":{"gpt-4.1":{"output":8}}}`, `pricing["gpt-4.1"].input: is required`},
		{"price without output", `{"pricing":{"m":{"input":8}}}`, `pricing.m.output: is required`},
		{"negative price", `{"pricing":{"m":{"input":-1,"output":1}}}`, `pricing.m.input: must not be negative`},
		{"price finer than the unit", `{"pricing":{"m":{"input":1,"output":"1e-10"}}}`, `pricing.m.output: has more than 9 decimal places`},
		{"tier without threshold", `{"pricing":{"m":{"input":1,"output":1,"tier":{"input":2,"output":2}}}}`, `pricing.m.above_input_tokens: is required with tier`},
		{"threshold without tier", `{"pricing":{"m":{"input":1,"output":1,"above_input_tokens":100}}}`, `pricing.m.tier: is required with above_input_tokens`},
		{"zero threshold", `{"pricing":{"m":{"input":1,"output":1,"above_input_tokens":0,"tier":{"input":2,"output":2}}}}`, `pricing.m.above_input_tokens: must be greater than 0`},
		{"tier without output", `{"pricing":{"m":{"input":1,"output":1,"above_input_tokens":5,"tier":{"input":2}}}}`, `pricing.m.tier.output: is required`},
		{"per_request is not a tier rate", `{"pricing":{"m":{"input":1,"output":1,"above_input_tokens":5,"tier":{"input":2,"output":2,"per_request":1}}}}`, `pricing.m.tier: unknown field "per_request"`},
		{"empty model name", `{"pricing":{"":{"input":1,"output":1}}}`, `pricing[""]: model name must not be empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Contains(t, loadErr(t, tt.raw), tt.want)
		})
	}
}

func TestSpendWarningsSayWhatTheConfigCannotDo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		want      []string
		not       []string
	}{
		{"local counters and no default price", `{"api_keys":[{"key":"k","spend_limit_day_usd":5}]}`,
			[]string{"spend is counted per Envoy in local memory", "counters start from $0 after a restart", `pricing: no "default" entry`}, nil},
		{"redis storage and a default price warn of neither", `{"rate_limiting":{"storage":"redis","redis":{"cluster":"ss"}},"api_keys":[{"key":"k","spend_limit_day_usd":5}],"pricing":{"default":{"input":1,"output":1}}}`,
			nil, []string{"local memory", `no "default"`}},
		{"a team no key names", `{"api_keys":[{"key":"k","team":"acme"}],"spend_limits":{"teams":{"acme":{"month_usd":1},"acne":{"month_usd":1}}}}`,
			[]string{"spend_limits.teams.acne: no api_keys entry names this team"}, []string{"spend_limits.teams.acme:"}},
		{"a trusted header can name any team", `{"identity":{"trusted_team_header":"x-team"},"spend_limits":{"teams":{"acne":{"month_usd":1}}}}`,
			nil, []string{"no api_keys entry names"}},
		{"a user no key names", `{"api_keys":[{"key":"k","user":"ann"}],"spend_limits":{"users":{"bob":{"day_usd":1}}}}`,
			[]string{"spend_limits.users.bob: no api_keys entry names this user"}, nil},
		{"tier defaults are spend limits too", `{"rate_limiting":{"tier_overrides":{"pro":{"cost_per_month_usd":10}}}}`,
			[]string{"local memory"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, w := mustLoad(t, tt.raw)
			all := strings.Join(w, "\n")
			for _, s := range tt.want {
				require.Contains(t, all, s)
			}
			for _, s := range tt.not {
				require.NotContains(t, all, s)
			}
		})
	}
}

// A USD field takes exactly the values package money reads from the same
// JSON token, and refuses with the field's path everything else.
func FuzzUSDFieldAcceptsExactlyWhatMoneyParses(f *testing.F) {
	for _, s := range []string{`200`, `"200.00"`, `0.15`, `1e-6`, `"2.5e-06"`, `-1`, `"1e-10"`, `true`, `"\u0031"`, `[]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		tok = strings.TrimSpace(tok)
		if !json.Valid([]byte(tok)) || tok == "null" {
			return
		}
		raw := `{"api_keys":[{"key":"k","spend_limit_day_usd":` + tok + `}]}`
		c, err := Parse([]byte(raw))
		if !utf8.ValidString(tok) {
			require.ErrorContains(t, err, "not valid UTF-8", "a config with invalid UTF-8 is refused whole")
			return
		}
		want, wantErr := money.ParseJSON([]byte(tok))
		if wantErr != nil {
			require.Error(t, err)
			require.Contains(t, err.Error(), "api_keys[0].spend_limit_day_usd: ")
			return
		}
		require.NoError(t, err)
		require.Equal(t, USD(want), *c.APIKeys[0].SpendLimitDayUSD)
	})
}

// The lookup runs on every request: map reads only.
func TestSpendPolicyAndPriceLookupsDoNotAllocate(t *testing.T) {
	rt, _ := mustLoad(t, spendConfig)
	k := rt.Key(sha("sk-own"))
	allocs := testing.AllocsPerRun(100, func() {
		p := rt.SpendPolicy(k, "ann", "acme")
		if !p.Any() {
			t.Fatal("policy lost")
		}
		if _, ok := rt.Price("gpt"); !ok {
			t.Fatal("default lost")
		}
	})
	require.Zero(t, allocs)
}

func TestSpendEntriesWithoutALimitConfigureNothing(t *testing.T) {
	t.Parallel()
	rt, w := mustLoad(t, `{"spend_limits":{"teams":{"t":{}},"users":{"u":{"day_usd":null}}}}`)
	require.False(t, rt.HasSpendLimits())
	require.NotContains(t, strings.Join(w, "\n"), "spend", "nothing to warn about")
}

func TestFleetSpendNeedsTheFleetStoreAndAPriceList(t *testing.T) {
	t.Parallel()
	redis := `"storage":"redis","redis":{"cluster":"sharedstore","fleet_spend":true}`
	rt, _ := mustLoad(t, `{"rate_limiting":{`+redis+`},"pricing":{"default":{"input":"1","output":"1"}}}`)
	require.True(t, rt.FleetSpend())
	require.False(t, rt.HasSpendLimits(), "no limit of its own: the fleet's apply")
	require.Contains(t, loadErr(t, `{"rate_limiting":{`+redis+`}}`), "rate_limiting.redis.fleet_spend: needs a pricing section")
	require.Contains(t, loadErr(t, `{"rate_limiting":{"storage":"memory","redis":{"fleet_spend":true}},"pricing":{"default":{"input":"1","output":"1"}}}`),
		`rate_limiting.redis.fleet_spend: needs storage "redis"`)
	rt, _ = mustLoad(t, `{}`)
	require.False(t, rt.FleetSpend())
}

func TestFleetSpendIsTheDefaultWithRedisAndAPriceListAndFalseOptsOut(t *testing.T) {
	t.Parallel()
	priced := `,"pricing":{"default":{"input":"1","output":"1"}}}`
	for _, c := range []struct {
		name, redis, rest string
		fleet             bool
		warn              []string
	}{
		{"unset with a price list: on", `{"cluster":"sharedstore"}`, priced, true, nil},
		{"false: off, and validate names the admin API", `{"cluster":"sharedstore","fleet_spend":false}`, priced, false,
			[]string{"rate_limiting.redis.fleet_spend: false", "admin API", "do not apply"}},
		{"no price list: off, and validate says ledger limits cannot apply", `{"cluster":"sharedstore"}`, `}`, false,
			[]string{"pricing: absent under storage \"redis\"", "stored in sharedstore's ledger", "cannot apply"}},
		{"a price list without default: on, and unpriced models are refused", `{"cluster":"sharedstore"}`,
			`,"pricing":{"gpt-4o":{"input":"1","output":"1"}}}`, true, []string{"pricing: no \"default\" entry", "model_not_priced"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rt, w := mustLoad(t, `{"rate_limiting":{"storage":"redis","redis":`+c.redis+`}`+c.rest)
			require.Equal(t, c.fleet, rt.FleetSpend())
			if c.warn == nil {
				for _, s := range w {
					require.NotContains(t, s, "fleet_spend")
					require.NotContains(t, s, "pricing")
				}
				return
			}
			requireWarning(t, w, c.warn...)
		})
	}
	rt, w := mustLoad(t, `{"rate_limiting":{"storage":"memory"}`+priced)
	require.False(t, rt.FleetSpend(), "in memory there is no ledger")
	require.NotContains(t, strings.Join(w, "\n"), "ledger")
}
