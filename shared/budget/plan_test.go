package budget_test

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

const rawKey = "sk-test-raw-secret"

func load(t testing.TB, raw string) *config.Runtime {
	t.Helper()
	rt, _, err := config.Load([]byte(raw))
	require.NoError(t, err)
	return rt
}

// everything configures every dimension with both token periods and
// request limits, and one key with its own user and team.
const everything = `{
  "rate_limiting": {
    "limits": {
      "global":      { "tokens_per_minute": 100000, "tokens_per_day": 1000000, "requests_per_second": 50, "burst_capacity": 100 },
      "per_client":  { "tokens_per_minute": 20000, "tokens_per_day": 200000, "requests_per_minute": 600 },
      "per_api_key": { "tokens_per_minute": 6000, "tokens_per_day": 86400, "requests_per_second": 5, "burst_capacity": 10,
                       "requests_per_minute": 100, "requests_per_day": 1000, "concurrent_requests": 2 },
      "per_user":    { "tokens_per_minute": 9000, "tokens_per_day": 90000 },
      "per_team":    { "tokens_per_minute": 12000, "tokens_per_day": 120000 },
      "per_model":   { "gpt-4o": { "tokens_per_minute": 50000, "tokens_per_day": 500000, "concurrent_requests": 3 } }
    }
  },
  "api_keys": [ { "key": "` + rawKey + `", "id": "k1", "user": "alice", "team": "research" } ]
}`

func fullIdentity(rt *config.Runtime) budget.Identity {
	h := identity.HashKey(rawKey)
	return budget.Identity{APIKeyHash: h, Key: rt.Key(h), Client: "10.1.2.3", Model: "gpt-4o"}
}

func dims(ops []limit.Op) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.Dimension.String()
	}
	return out
}

func TestPlanCoversEveryDimensionInOrder(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	plan, skipped := budget.Plan(rt, fullIdentity(rt), 700)
	require.Empty(t, skipped)
	require.Equal(t, []string{"global", "client", "api_key", "user", "team", "model"}, dims(plan.Tokens))
	require.Equal(t, []string{"global", "client", "api_key", "api_key", "model"}, dims(plan.Requests))
	for _, op := range plan.Tokens {
		require.Equal(t, int64(700), op.Amount)
		require.Equal(t, limit.KindTokens, op.Kind)
		require.Equal(t, op.Dimension == limit.DimAPIKey, op.Private, op.Dimension)
	}
	for _, op := range plan.Requests {
		require.Equal(t, int64(1), op.Amount)
		require.Equal(t, op.Dimension == limit.DimAPIKey, op.Private, op.Dimension)
	}
}

func TestPlanLimitsFollowTheConfiguredRates(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	plan, _ := budget.Plan(rt, fullIdentity(rt), 1)
	require.Equal(t, []limit.Limit{
		{Budget: limit.PeriodMinute, Capacity: 6000, RefillPerSec: 100},
		{Budget: limit.PeriodDay, Capacity: 86400, RefillPerSec: 1},
	}, plan.Tokens[2].Limits, "capacity is one period of the rate, refilled over the period")
	require.Equal(t, []limit.Limit{
		{Budget: limit.PeriodSecond, Capacity: 10, RefillPerSec: 5},
		{Budget: limit.PeriodMinute, Capacity: 100, RefillPerSec: 100.0 / 60},
		{Budget: limit.PeriodDay, Capacity: 1000, RefillPerSec: 1000.0 / 86400},
	}, plan.Requests[2].Limits)
	require.Equal(t, limit.KindConcurrency, plan.Requests[3].Kind)
	require.Equal(t, []limit.Limit{{Budget: limit.PeriodConcurrent, Capacity: 2}}, plan.Requests[3].Limits)
	require.Equal(t, limit.KindConcurrency, plan.Requests[4].Kind, "models[].concurrent_requests")
}

func TestBucketKeysCarryKindDimensionVersionAndHashedIdentity(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	id := fullIdentity(rt)
	plan, _ := budget.Plan(rt, id, 1)
	apiRules := rt.APIKeyRules(id.Key)
	require.Equal(t, "tb|t|global|"+rt.Global.TokensVersion+"|", plan.Tokens[0].Key)
	require.Equal(t, "tb|t|client|"+rt.Client.TokensVersion+"|10.1.2.3", plan.Tokens[1].Key)
	require.Equal(t, "tb|t|api_key|"+apiRules.TokensVersion+"|"+id.APIKeyHash, plan.Tokens[2].Key)
	require.Equal(t, "tb|t|user|"+rt.User.TokensVersion+"|alice", plan.Tokens[3].Key, "the key's user")
	require.Equal(t, "tb|t|team|"+rt.Team.TokensVersion+"|research", plan.Tokens[4].Key, "the key's team")
	require.Equal(t, "tb|t|model|"+rt.Models["gpt-4o"].TokensVersion+"|gpt-4o", plan.Tokens[5].Key)
	require.Equal(t, "tb|r|api_key|"+apiRules.RequestsVersion+"|"+id.APIKeyHash, plan.Requests[2].Key)
	require.Equal(t, "tb|c|api_key|"+apiRules.RequestsVersion+"|"+id.APIKeyHash, plan.Requests[3].Key)
	for _, op := range append(plan.Requests, plan.Tokens...) {
		require.NotContains(t, op.Key, rawKey, "the raw key never reaches a bucket key")
	}
}

func TestAChangedBudgetStartsFreshBucketsAndKeepsTheOthers(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	changed := load(t, strings.Replace(everything, `"tokens_per_minute": 6000`, `"tokens_per_minute": 7000`, 1))
	a, _ := budget.Plan(rt, fullIdentity(rt), 1)
	b, _ := budget.Plan(changed, fullIdentity(changed), 1)
	require.NotEqual(t, a.Tokens[2].Key, b.Tokens[2].Key, "the api_key token budget changed")
	require.Equal(t, a.Requests[2].Key, b.Requests[2].Key, "its request limits did not")
	require.Equal(t, a.Tokens[0].Key, b.Tokens[0].Key, "global did not")
}

func TestADimensionWithoutIdentityIsSkippedAndNamed(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	plan, skipped := budget.Plan(rt, budget.Identity{}, 10)
	require.Equal(t, []string{"global"}, dims(plan.Tokens))
	require.Equal(t, []string{"global"}, dims(plan.Requests))
	require.Equal(t, []string{
		"token_budget_client", "requests_client",
		"token_budget_api_key", "requests_api_key",
		"token_budget_user", "token_budget_team",
		"token_budget_model", "requests_model",
	}, skipped)
}

func TestAnUnlimitedPeriodIsAbsentAndAZeroAllowanceRefuses(t *testing.T) {
	rt := load(t, `{
	  "rate_limiting": {
	    "budget_division": { "replicas": 3 },
	    "limits": { "global": { "tokens_per_minute": 2 }, "per_team": { "tokens_per_day": 30 } }
	  }
	}`)
	plan, _ := budget.Plan(rt, budget.Identity{Team: "t"}, 1)
	require.Equal(t, []limit.Limit{{Budget: limit.PeriodMinute}}, plan.Tokens[0].Limits, "2/3 floors to a budget of zero, not unlimited")
	require.Equal(t, []limit.Limit{{Budget: limit.PeriodDay, Capacity: 10, RefillPerSec: 10.0 / 86400}}, plan.Tokens[1].Limits)
	require.Empty(t, plan.Requests)

	out := admitOnce(t, plan)
	require.False(t, out.Admitted())
	require.Equal(t, limit.DimGlobal, out.Refusal.Dimension)
}

func TestAModelWithoutAnEntryHasNoModelBudget(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	id := fullIdentity(rt)
	id.Model = "other"
	plan, skipped := budget.Plan(rt, id, 1)
	require.Empty(t, skipped)
	require.NotContains(t, dims(plan.Tokens), "model")
}

func TestNoBudgetConfiguredPlansNothing(t *testing.T) {
	t.Parallel()
	rt := load(t, `{"rate_limiting": {"limits": {}}}`)
	plan, skipped := budget.Plan(rt, budget.Identity{Client: "c"}, 10)
	require.Empty(t, plan.Requests)
	require.Empty(t, plan.Tokens)
	require.Empty(t, skipped)
	plan, _ = budget.Plan(nil, budget.Identity{}, 10)
	require.Empty(t, plan.Tokens)
}

// TestAReservationChargesInputAndOutputAgainstOneWindowPerPeriod pins issue
// #2898's decision: no input/output split, one window per period.
func TestAReservationChargesInputAndOutputAgainstOneWindowPerPeriod(t *testing.T) {
	t.Parallel()
	const input, output = 1200, 800
	rt := load(t, everything)
	plan, _ := budget.Plan(rt, fullIdentity(rt), input+output)
	for _, op := range plan.Tokens {
		require.Len(t, op.Limits, 2, "one minute and one day window, nothing per direction")
		require.Equal(t, limit.PeriodMinute, op.Limits[0].Budget)
		require.Equal(t, limit.PeriodDay, op.Limits[1].Budget)
	}
	sd := localtest.New()
	store := local.New(sd, func() int64 { return 1_700_000_000e9 }, 0)
	store.Admit(plan, func(out limit.Outcome) {
		require.True(t, out.Admitted())
		require.Contains(t, out.Levels, limit.OpLevel{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute,
			Level: limit.Level{Capacity: 6000, Remaining: 6000 - input - output, ResetUnix: 1_700_000_020}})
		require.Contains(t, out.Levels, limit.OpLevel{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodDay,
			Level: limit.Level{Capacity: 86400, Remaining: 86400 - input - output, ResetUnix: 1_700_002_000}})
	})
}

// TestTheHoldIsTheEstimatePlusTheOutputCeiling pins the zero reservation
// margin: the hold is exactly the amount planned, on every dimension.
func TestTheHoldIsTheEstimatePlusTheOutputCeiling(t *testing.T) {
	t.Parallel()
	const estimate, ceiling = 345, 4096
	rt := load(t, everything)
	plan, _ := budget.Plan(rt, fullIdentity(rt), estimate+ceiling)
	out := admitOnce(t, plan)
	require.True(t, out.Admitted())
	require.Equal(t, int64(estimate+ceiling), out.Hold.Reserved())
	tokenEntries := 0
	for _, e := range out.Hold.Entries {
		if e.Kind == limit.KindTokens {
			tokenEntries++
			require.Equal(t, int64(estimate+ceiling), e.Amount, e.Dimension)
		}
	}
	require.Equal(t, 6, tokenEntries)
}

func TestPlanAllocatesOnlyWhatThePlanHolds(t *testing.T) {
	rt := load(t, everything)
	id := fullIdentity(rt)
	allocs := testing.AllocsPerRun(100, func() { budget.Plan(rt, id, 100) })
	require.LessOrEqual(t, allocs, 4.0, "two op slices, one limits array, one key string")
}

// A plan made in lent buffers is the plan Plan makes, whatever the plans
// the buffers held before (larger, smaller, other keys), and once they are
// large enough it allocates nothing.
func TestAPlanInReusedBuffersIsThePlanAndAllocatesNothing(t *testing.T) {
	rt := load(t, everything)
	full := fullIdentity(rt)
	keyOnly := budget.Identity{APIKeyHash: full.APIKeyHash, Key: full.Key}
	other := budget.Identity{APIKeyHash: identity.HashKey("sk-other"), User: "bob", Team: "ops", Client: "10.9.9.9", Model: "gpt-4o"}
	var b budget.Buffers
	for _, id := range []budget.Identity{keyOnly, full, keyOnly, other, full} {
		want, wantSkipped := budget.Plan(rt, id, 300)
		got, skipped := b.Plan(rt, &id, 300)
		require.Equal(t, want, got)
		require.Equal(t, wantSkipped, skipped)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { b.Plan(rt, &full, 100) }))
}

func admitOnce(t *testing.T, plan limit.Plan) limit.Outcome {
	t.Helper()
	var out limit.Outcome
	local.New(localtest.New(), func() int64 { return 1_700_000_000e9 }, 0).Admit(plan, func(o limit.Outcome) { out = o })
	return out
}

func BenchmarkPlanSixDimensions(b *testing.B) {
	rt := load(b, everything)
	id := fullIdentity(rt)
	b.ReportAllocs()
	for b.Loop() {
		budget.Plan(rt, id, 100)
	}
}

func TestThePlanCarriesOnUncoveredOverage(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		setting string
		want    limit.Overage
	}{
		{"absent is debt", ``, limit.OverageDebt},
		{"debt", `,"token_budget":{"on_uncovered_overage":"debt"}`, limit.OverageDebt},
		{"skip", `,"token_budget":{"on_uncovered_overage":"skip"}`, limit.OverageSkip},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := load(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000}}}`+c.setting+`}`)
			plan, _ := budget.Plan(rt, budget.Identity{}, 700)
			require.Equal(t, c.want, plan.Overage)

			out := admitOnce(t, plan)
			require.True(t, out.Admitted())
			require.Equal(t, c.want, out.Hold.Overage, "the hold records the rule it settles by")
		})
	}
}

// Buffers that remember key prefixes write the keys a fresh Plan writes,
// across a reload that changes some budgets and not others, and back.
func TestReusedBuffersWriteTheKeysOfTheConfigInForce(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	changed := load(t, strings.Replace(everything, `"tokens_per_minute": 6000`, `"tokens_per_minute": 7000`, 1))
	var b budget.Buffers
	for i, cfg := range []*config.Runtime{rt, rt, changed, changed, rt} {
		id := fullIdentity(cfg)
		want, _ := budget.Plan(cfg, id, 1)
		got, _ := b.Plan(cfg, &id, 1)
		require.Equal(t, want, got, "plan %d", i)
	}
}

// Buffers replay their last plan for the same caller under the same config
// with the new amount, and plan afresh for anything else: each plan of the
// sequence, its skipped dimensions included, is the plan a fresh Plan
// makes. The identity's texts view one byte buffer that each step
// overwrites, as a header listing or a body read into a reused buffer is:
// a memo that kept views would find the new text equal to its own.
func TestReusedBuffersReplayAPlanOnlyForTheSameCallerAndConfig(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	changed := load(t, strings.Replace(everything, `"tokens_per_minute": 6000`, `"tokens_per_minute": 7000`, 1))
	h := identity.HashKey(rawKey)
	other := identity.HashKey("sk-other")
	type step struct {
		name          string
		rt            *config.Runtime
		key           string
		client, model string
		user, team    string
		amount        int64
	}
	steps := []step{
		{name: "first", rt: rt, key: h, client: "10.1.2.3", model: "gpt-4o", amount: 100},
		{name: "second fills the memo", rt: rt, key: h, client: "10.1.2.3", model: "gpt-4o", amount: 200},
		{name: "replayed with its own amount", rt: rt, key: h, client: "10.1.2.3", model: "gpt-4o", amount: 300},
		{name: "a zero amount", rt: rt, key: h, client: "10.1.2.3", model: "gpt-4o", amount: 0},
		{name: "another model of the same length", rt: rt, key: h, client: "10.1.2.3", model: "gpt-4x", amount: 300},
		{name: "another client of the same length", rt: rt, key: h, client: "10.1.2.4", model: "gpt-4x", amount: 300},
		{name: "no client: skipped", rt: rt, key: h, model: "gpt-4x", amount: 300},
		{name: "no client again", rt: rt, key: h, model: "gpt-4x", amount: 301},
		{name: "a user of its own", rt: rt, key: h, model: "gpt-4x", user: "bob", amount: 301},
		{name: "another user of the same length", rt: rt, key: h, model: "gpt-4x", user: "bib", amount: 301},
		{name: "a team of its own", rt: rt, key: h, model: "gpt-4x", user: "bib", team: "ops", amount: 301},
		{name: "an unknown key", rt: rt, key: other, model: "gpt-4x", amount: 301},
		{name: "no key", rt: rt, model: "gpt-4x", amount: 301},
		{name: "no model", rt: rt, key: h, amount: 301},
		{name: "a reloaded config", rt: changed, key: h, amount: 301},
		{name: "the reloaded config again", rt: changed, key: h, amount: 302},
		{name: "back to the first config", rt: rt, key: h, amount: 302},
	}
	var b budget.Buffers
	text := make([]byte, 0, 64)
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			// Every text of the identity views text, overwritten each step.
			text = append(text[:0], s.client...)
			text = append(text, s.model...)
			text = append(text, s.user...)
			text = append(text, s.team...)
			view := func(from, n int) string { return unsafe.String(unsafe.SliceData(text[from:]), n) }
			id := budget.Identity{APIKeyHash: s.key, Client: view(0, len(s.client)), Model: view(len(s.client), len(s.model)),
				User: view(len(s.client)+len(s.model), len(s.user)), Team: view(len(s.client)+len(s.model)+len(s.user), len(s.team))}
			if s.key != "" {
				id.Key = s.rt.Key(s.key)
			}
			fresh := id
			fresh.Client, fresh.Model = strings.Clone(id.Client), strings.Clone(id.Model)
			fresh.User, fresh.Team = strings.Clone(id.User), strings.Clone(id.Team)
			want, wantSkipped := budget.Plan(s.rt, fresh, s.amount)

			got, skipped := b.Plan(s.rt, &id, s.amount)
			require.Equal(t, want, got)
			require.Equal(t, wantSkipped, skipped)
			// A caller may append to the skipped list it was given.
			_ = append(skipped, "appended by the caller")
		})
	}
}

// A dimension with request counts and token budgets has its two ops share
// one record (limit.Op.Record), keyed by both versions and the identity; a
// dimension with one of them, and a concurrency op, has none.
func TestADimensionWithRequestCountsAndTokensSharesOneRecord(t *testing.T) {
	t.Parallel()
	rt := load(t, everything)
	id := fullIdentity(rt)
	plan, _ := budget.Plan(rt, id, 1)
	apiRules := rt.APIKeyRules(id.Key)
	records := map[string]string{}
	for _, op := range append(slices.Clone(plan.Requests), plan.Tokens...) {
		records[op.Kind.String()+" "+op.Dimension.String()] = op.Record
	}
	require.Equal(t, map[string]string{
		"requests global":     "tb|q|global|" + rt.Global.RequestsVersion + "|" + rt.Global.TokensVersion + "|",
		"tokens global":       "tb|q|global|" + rt.Global.RequestsVersion + "|" + rt.Global.TokensVersion + "|",
		"requests client":     "tb|q|client|" + rt.Client.RequestsVersion + "|" + rt.Client.TokensVersion + "|10.1.2.3",
		"tokens client":       "tb|q|client|" + rt.Client.RequestsVersion + "|" + rt.Client.TokensVersion + "|10.1.2.3",
		"requests api_key":    "tb|q|api_key|" + apiRules.RequestsVersion + "|" + apiRules.TokensVersion + "|" + id.APIKeyHash,
		"tokens api_key":      "tb|q|api_key|" + apiRules.RequestsVersion + "|" + apiRules.TokensVersion + "|" + id.APIKeyHash,
		"concurrency api_key": "",
		"tokens user":         "",
		"tokens team":         "",
		"tokens model":        "",
		"concurrency model":   "",
	}, records)

	changed := load(t, strings.Replace(everything, `"tokens_per_minute": 6000`, `"tokens_per_minute": 7000`, 1))
	again, _ := budget.Plan(changed, fullIdentity(changed), 1)
	require.NotEqual(t, plan.Tokens[2].Record, again.Tokens[2].Record, "either budget changed restarts the record")
	require.Equal(t, again.Tokens[2].Record, again.Requests[2].Record)
	require.Equal(t, plan.Tokens[0].Record, again.Tokens[0].Record, "global did not change")
}
