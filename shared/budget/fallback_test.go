package budget_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/budget"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// fleetEverything is everything on the fleet store with the replicas hint:
// the hint sizes only the fallback buckets.
var fleetEverything = strings.Replace(everything, `"rate_limiting": {`,
	`"rate_limiting": { "storage": "redis", "redis": { "cluster": "store" }, "budget_division": { "replicas": 4 },`, 1)

func TestAFallbackPlanIsTheSameRequestOnTheDividedBudgets(t *testing.T) {
	rt := load(t, fleetEverything)
	require.NotNil(t, rt.Fallback())
	id := fullIdentity(rt)
	fleet, _ := budget.Plan(rt, id, 700)
	got := budget.FallbackPlan(rt, fleet)

	want, _ := budget.Plan(rt.Fallback(), id, 700)
	require.Equal(t, want, got, "the identity and amount read back from the plan")
	require.Equal(t, dims(fleet.Tokens), dims(got.Tokens))
	require.Equal(t, dims(fleet.Requests), dims(got.Requests))
	for i, op := range got.Tokens {
		f := fleet.Tokens[i]
		require.Equal(t, f.Amount, op.Amount)
		require.Equal(t, f.Private, op.Private)
		require.NotEqual(t, f.Key, op.Key, "%s: the fallback buckets are not the fleet's", op.Dimension)
		for j, l := range op.Limits {
			require.Equal(t, f.Limits[j].Capacity/4, l.Capacity, "%s %s: one replica's share", op.Dimension, l.Budget)
		}
	}
	for i, op := range got.Requests {
		require.Equal(t, fleet.Requests[i].Limits, op.Limits, "request limits are never divided")
	}
}

func TestAFallbackPlanReadsBackEveryIdentity(t *testing.T) {
	rt := load(t, strings.Replace(fleetEverything, `"api_keys"`, `"identity": { "trusted_user_header": "x-user" }, "api_keys"`, 1))
	cases := []struct {
		name string
		id   budget.Identity
	}{
		{"a user name with bars in it", budget.Identity{Client: "10.0.0.1", User: "a|b||c", Team: "t|1"}},
		{"an unknown key", budget.Identity{APIKeyHash: strings.Repeat("ab", 32), Client: "::1"}},
		{"a known key brings its user and team", fullIdentity(rt)},
		{"no identity at all", budget.Identity{}},
		{"a model with no entry", budget.Identity{Client: "c", Model: "other"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, amount := range []int64{0, 1, 123456} {
				fleet, _ := budget.Plan(rt, c.id, amount)
				id := c.id
				if id.APIKeyHash != "" {
					id.Key = rt.Fallback().Key(id.APIKeyHash)
				}
				want, _ := budget.Plan(rt.Fallback(), id, amount)
				require.Equal(t, want, budget.FallbackPlan(rt, fleet))
			}
		})
	}
}

func TestAFallbackPlanKeepsTheOverageRule(t *testing.T) {
	rt := load(t, strings.Replace(fleetEverything, `"api_keys"`, `"token_budget": { "on_uncovered_overage": "skip" }, "api_keys"`, 1))
	fleet, _ := budget.Plan(rt, fullIdentity(rt), 10)
	require.Equal(t, limit.OverageSkip, budget.FallbackPlan(rt, fleet).Overage)
}

func TestWithoutADivisionTheFallbackPlanIsThePlan(t *testing.T) {
	t.Parallel()
	for name, raw := range map[string]string{
		"memory storage": everything,
		"redis without a hint": strings.Replace(everything, `"rate_limiting": {`,
			`"rate_limiting": { "storage": "redis", "redis": { "cluster": "store" },`, 1),
	} {
		rt := load(t, raw)
		plan, _ := budget.Plan(rt, fullIdentity(rt), 700)
		require.Equal(t, plan, budget.FallbackPlan(rt, plan), name)
	}
}

func TestAPlanWhoseKeysDoNotReadBackIsKeptAsIs(t *testing.T) {
	rt := load(t, fleetEverything)
	for _, key := range []string{"", "tb|", "tb|t", "tb|t|global", "tb|t|global|v", "xx|t|global|v|", "tb|tt|global|v|x", "tb|t|elsewhere|v|x"} {
		plan := limit.Plan{Tokens: []limit.Op{{Key: key, Kind: limit.KindTokens, Dimension: limit.DimGlobal, Amount: 5,
			Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: 100000}}}}}
		require.Equal(t, plan, budget.FallbackPlan(rt, plan), key)
	}
	require.Equal(t, limit.Plan{}, budget.FallbackPlan(nil, limit.Plan{}))
}

// FuzzFallbackPlanReadsBackAnyIdentity: whatever the identities (bars,
// empty strings, bytes that are not UTF-8), the fallback plan of a plan is
// the plan Plan makes on the fallback rules, and a plan with arbitrary keys
// never panics.
func FuzzFallbackPlanReadsBackAnyIdentity(f *testing.F) {
	f.Add("10.0.0.1", "alice", "team|x", "gpt-4o", int64(700), "tb|t|global|v|")
	f.Add("", "", "", "", int64(0), "")
	f.Add("|", "||", "a|b|c", "|gpt", int64(1<<40), "tb|x|api_key||")
	rt := load(f, strings.Replace(fleetEverything, `"api_keys"`, `"identity": { "trusted_user_header": "x-user", "trusted_team_header": "x-team" }, "api_keys"`, 1))
	f.Fuzz(func(t *testing.T, client, user, team, model string, amount int64, key string) {
		id := budget.Identity{Client: client, User: user, Team: team, Model: model}
		fleet, _ := budget.Plan(rt, id, amount)
		want, _ := budget.Plan(rt.Fallback(), id, amount)
		require.Equal(t, want, budget.FallbackPlan(rt, fleet))

		odd := limit.Plan{Tokens: []limit.Op{{Key: key, Kind: limit.KindTokens, Dimension: limit.DimGlobal, Amount: amount}}}
		_ = budget.FallbackPlan(rt, odd)
	})
}

func TestAFallbackPlanKeepsTheSpendLimitsUndivided(t *testing.T) {
	rt := load(t, fleetEverything)
	fleet, _ := budget.Plan(rt, fullIdentity(rt), 700)
	fleet.Spend.Policy.APIKey = "k"
	fleet.Spend.Policy.Limits[spend.KeyDay] = spend.Limit{Amount: 5 * money.OneUSD, Set: true}
	fleet.Spend.Day.Key = 20260930
	require.Equal(t, fleet.Spend, budget.FallbackPlan(rt, fleet).Spend)
}
