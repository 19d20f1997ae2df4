package config

import (
	"math/rand"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// dims returns the six divided dimensions of a runtime, model "m" last.
func dims(t *testing.T, rt *Runtime) map[string]Rules {
	t.Helper()
	m, ok := rt.Model("m")
	require.True(t, ok)
	return map[string]Rules{"global": rt.Global, "client": rt.Client, "api_key": rt.APIKeyDefault,
		"user": rt.User, "team": rt.Team, "model": m.Rules}
}

func sixDims(tpm, tpd int64) string {
	s := `{"tokens_per_minute":` + strconv.FormatInt(tpm, 10) + `,"tokens_per_day":` + strconv.FormatInt(tpd, 10) + `}`
	return `"limits":{"global":` + s + `,"per_client":` + s + `,"per_api_key":` + s + `,"per_user":` + s + `,"per_team":` + s + `,"per_model":{"m":` + s + `}}`
}

func TestDivisionFloorsEveryTokenDimensionOnBothPeriods(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for i := 0; i < 300; i++ {
		tpm := rng.Int63n(1_000_000) // includes 0 now and then below
		tpd := rng.Int63n(100_000_000)
		if i%10 == 0 {
			tpm = 0
		}
		replicas := 1 + rng.Int63n(50)
		if i%7 == 0 {
			replicas = tpm + 1 + rng.Int63n(5) // fleet larger than the budget
		}
		rt, _ := mustLoad(t, `{"rate_limiting":{`+sixDims(tpm, tpd)+`,"budget_division":{"replicas":`+strconv.FormatInt(replicas, 10)+`}}}`)
		for name, r := range dims(t, rt) {
			if tpm == 0 {
				require.Equal(t, unlimited, r.Tokens.Minute, "%s: configured 0 stays unlimited", name)
			} else {
				require.Equal(t, limited(tpm/replicas), r.Tokens.Minute, "%s tpm=%d replicas=%d", name, tpm, replicas)
			}
			if tpd == 0 {
				require.Equal(t, unlimited, r.Tokens.Day, name)
			} else {
				require.Equal(t, limited(tpd/replicas), r.Tokens.Day, "%s tpd=%d replicas=%d", name, tpd, replicas)
			}
		}
	}
}

func TestDividedDownToZeroIsAZeroAllowanceNotUnlimited(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":2}},"budget_division":{"replicas":3}}}`)
	require.Equal(t, Allowance{Unlimited: false, Capacity: 0}, rt.Global.Tokens.Minute)
	require.True(t, rt.HasTokenBudget())
}

func TestSharePrecedenceIsPerPeriodAndIndependent(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for i := 0; i < 300; i++ {
		tpm, tpd := 1+rng.Int63n(1_000_000), 1+rng.Int63n(100_000_000)
		if i%9 == 0 {
			tpm = 0
		}
		replicas := 1 + rng.Int63n(20)
		var shareMin, shareDay *int64
		share := `{`
		if rng.Intn(2) == 0 {
			v := rng.Int63n(5000) // 0 sometimes: authoritative zero
			if i%5 == 0 {
				v = 0
			}
			shareMin = &v
			share += `"share_tokens_per_minute":` + strconv.FormatInt(v, 10)
		}
		if rng.Intn(2) == 0 {
			v := rng.Int63n(500000)
			shareDay = &v
			if shareMin != nil {
				share += ","
			}
			share += `"share_tokens_per_day":` + strconv.FormatInt(v, 10)
		}
		share += `}`
		hint := ""
		if rng.Intn(2) == 0 {
			hint = `,"budget_division":{"replicas":` + strconv.FormatInt(replicas, 10) + `}`
		} else {
			replicas = 1
		}
		rt, _ := mustLoad(t, `{"rate_limiting":{`+sixDims(tpm, tpd)+hint+`},"deployment_token_budget":`+share+`}`)
		want := func(configured int64, share *int64) Allowance {
			switch {
			case configured == 0:
				return unlimited
			case share != nil:
				return limited(*share)
			default:
				return limited(configured / replicas)
			}
		}
		for name, r := range dims(t, rt) {
			require.Equal(t, want(tpm, shareMin), r.Tokens.Minute, "%s minute, case %d", name, i)
			require.Equal(t, want(tpd, shareDay), r.Tokens.Day, "%s day, case %d", name, i)
		}
	}
}

func TestZeroShareRefusesWhileAbsentShareFallsBackToTheHint(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":900,"tokens_per_day":9000}},"budget_division":{"replicas":3}},
		"deployment_token_budget":{"share_tokens_per_minute":0}}`)
	require.Equal(t, limited(0), rt.APIKeyDefault.Tokens.Minute, "zero share is a zero allowance")
	require.Equal(t, limited(3000), rt.APIKeyDefault.Tokens.Day, "absent day share keeps the hint")

	rt, _ = mustLoad(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":900}},"budget_division":{"replicas":3}},
		"deployment_token_budget":{}}`)
	require.Equal(t, limited(300), rt.APIKeyDefault.Tokens.Minute, "a statement with both shares absent returns to the hint")
}

func TestNoDivisorSourceKeepsTheConfiguredBudget(t *testing.T) {
	rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000,"tokens_per_day":0}}}}`)
	require.Equal(t, limited(1000), rt.Global.Tokens.Minute)
	require.Equal(t, unlimited, rt.Global.Tokens.Day)
}

func TestReplicasHintIsInertUnderRedisButAShareStillApplies(t *testing.T) {
	t.Parallel()
	base := `"storage":"redis","redis":{"cluster":"store"},"limits":{"global":{"tokens_per_minute":900,"tokens_per_day":9000}},"budget_division":{"replicas":3}`
	rt, _ := mustLoad(t, `{"rate_limiting":{`+base+`}}`)
	require.Equal(t, limited(900), rt.Global.Tokens.Minute)
	require.Equal(t, limited(9000), rt.Global.Tokens.Day)
	rt, _ = mustLoad(t, `{"rate_limiting":{`+base+`},"deployment_token_budget":{"share_tokens_per_day":77}}`)
	require.Equal(t, limited(900), rt.Global.Tokens.Minute)
	require.Equal(t, limited(77), rt.Global.Tokens.Day)
}

func TestUnderRedisTheHintDividesOnlyTheFallbackBuckets(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"storage":"redis","redis":{"cluster":"store"},
		"limits":{"global":{"tokens_per_minute":900,"tokens_per_day":9000,"requests_per_minute":60},
		          "per_api_key":{"tokens_per_minute":600,"tokens_per_day":6000},
		          "per_model":{"m":{"tokens_per_minute":300}}},
		"budget_division":{"replicas":3},
		"tier_overrides":{"pro":{"per_api_key":{"tokens_per_minute":450,"tokens_per_day":4500}}}},
		"deployment_token_budget":{"share_tokens_per_day":77},
		"api_keys":[{"key":"own","rate_limit_tokens_per_minute":5000},{"key":"tiered","tier":"pro"},{"key":"plain"}]}`)
	fb := rt.Fallback()
	require.NotNil(t, fb)
	require.Nil(t, fb.Fallback())

	require.Equal(t, limited(900), rt.Global.Tokens.Minute, "the fleet store keeps the deployment total")
	require.Equal(t, limited(300), fb.Global.Tokens.Minute, "the fallback bucket is one replica's share")
	require.Equal(t, limited(77), rt.Global.Tokens.Day, "a share applies to the fleet store")
	require.Equal(t, limited(77), fb.Global.Tokens.Day, "and to the fallback")
	require.Equal(t, rt.Global.Requests, fb.Global.Requests, "request limits are never divided")
	require.NotEqual(t, rt.Global.TokensVersion, fb.Global.TokensVersion, "the fallback buckets are their own")
	require.Equal(t, rt.Global.RequestsVersion, fb.Global.RequestsVersion)

	require.Equal(t, limited(200), fb.APIKeyDefault.Tokens.Minute)
	require.Equal(t, limited(100), fb.Models["m"].Tokens.Minute)
	own := fb.APIKeyRules(fb.Key(sha("own")))
	require.Equal(t, limited(5000), own.Tokens.Minute, "a key's minute override keeps the written value, as in memory mode")
	tiered := fb.APIKeyRules(fb.Key(sha("tiered")))
	require.Equal(t, limited(450), tiered.Tokens.Minute, "a tier minute override keeps the written value")
	require.Equal(t, limited(77), tiered.Tokens.Day, "the day share replaces the tier's day budget")
	require.Equal(t, limited(450), rt.APIKeyRules(rt.Key(sha("tiered"))).Tokens.Minute)
	require.Equal(t, fb.APIKeyDefault, *fb.APIKeyRules(fb.Key(sha("plain"))))
	require.True(t, fb.Key(sha("plain")).Known, "the fallback knows the same keys")
}

func TestNoFallbackRulesWhenNothingWouldDivideThem(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"memory storage divides the only buckets": `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":900}},"budget_division":{"replicas":3}}}`,
		"no hint":             `{"rate_limiting":{"storage":"redis","redis":{"cluster":"s"},"limits":{"global":{"tokens_per_minute":900}}}}`,
		"a share alone":       `{"rate_limiting":{"storage":"redis","redis":{"cluster":"s"},"limits":{"global":{"tokens_per_minute":900}}},"deployment_token_budget":{"share_tokens_per_minute":5}}`,
		"one replica":         `{"rate_limiting":{"storage":"redis","redis":{"cluster":"s"},"limits":{"global":{"tokens_per_minute":900}},"budget_division":{"replicas":1}}}`,
		"no fallback to take": `{"rate_limiting":{"storage":"redis","redis":{"cluster":"s","fallback_to_memory":false},"limits":{"global":{"tokens_per_minute":900}},"budget_division":{"replicas":3}}}`,
	} {
		rt, _ := mustLoad(t, raw)
		require.Nil(t, rt.Fallback(), name)
	}
}

func TestRequestLimitsAreNeverDivided(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"global":{"requests_per_second":10,"burst_capacity":20,"requests_per_minute":600,"requests_per_day":9000,"concurrent_requests":8}},
		"budget_division":{"replicas":4}},"deployment_token_budget":{"share_tokens_per_minute":1}}`)
	require.Equal(t, RequestLimits{PerSecond: 10, Burst: 20, PerMinute: 600, PerDay: 9000, Concurrent: 8}, rt.Global.Requests)
}

func TestPerKeyAndTierMinuteOverridesKeepTheWrittenValue(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":9000,"tokens_per_day":90000}},
		"budget_division":{"replicas":3},
		"tier_overrides":{"pro":{"per_api_key":{"tokens_per_minute":6000,"tokens_per_day":60000}}}},
		"deployment_token_budget":{"share_tokens_per_minute":10},
		"api_keys":[{"key":"own","rate_limit_tokens_per_minute":5000},{"key":"tiered","tier":"pro"},{"key":"plain"}]}`)
	own := rt.APIKeyRules(rt.Key(sha("own")))
	require.Equal(t, limited(5000), own.Tokens.Minute, "key minute override is not divided nor replaced by the share")
	require.Equal(t, limited(30000), own.Tokens.Day, "day stays the divided dimension budget")
	tiered := rt.APIKeyRules(rt.Key(sha("tiered")))
	require.Equal(t, limited(6000), tiered.Tokens.Minute, "tier minute override is not divided")
	require.Equal(t, limited(20000), tiered.Tokens.Day, "tier day budget is dimension-level and divided")
	plain := rt.APIKeyRules(rt.Key(sha("plain")))
	require.Equal(t, limited(10), plain.Tokens.Minute, "the share replaces the default minute budget")
	require.Equal(t, rt.APIKeyDefault, *plain)
}
