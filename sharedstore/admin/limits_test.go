//go:build !wasip1

package admin

import (
	"context"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

func TestASpendLimitIsSetChangedListedAndRemovedOverHTTP(t *testing.T) {
	f := newFixture(t)
	base := "/v1/admin/teams/research/spend-limits/"
	out := f.ok("PUT", base+"team/research/month", `{"limit_usd":"200.00"}`)
	require.Equal(t, map[string]any{"scope": "team", "id": "research", "period": "month", "limit_usd": "200.00"}, out)
	f.ok("PUT", base+"api_key/demo/day", `{"limit_usd":"5"}`)
	f.ok("PUT", base+"user/alice/month", `{"limit_usd":0.15}`)
	f.ok("PUT", base+"api_key/demo/day", `{"limit_usd":"7.5"}`)

	list := f.ok("GET", "/v1/admin/teams/research/spend-limits", "")
	require.Equal(t, map[string]any{"team": "research", "limits": []any{
		map[string]any{"scope": "api_key", "id": "demo", "period": "day", "limit_usd": "7.50"},
		map[string]any{"scope": "team", "id": "research", "period": "month", "limit_usd": "200.00"},
		map[string]any{"scope": "user", "id": "alice", "period": "month", "limit_usd": "0.15"},
	}}, list)
	got, err := f.ledger.Policies(context.Background(), "research")
	require.NoError(t, err)
	require.Contains(t, got, ledger.Policy{Scope: spend.APIKey, ID: "demo", Period: calendar.Day, Limit: usd(t, "7.5")},
		"the ledger holds the exact amount")

	require.Equal(t, true, f.ok("DELETE", base+"api_key/demo/day", "")["deleted"])
	st, out := f.call("DELETE", base+"api_key/demo/day", "")
	require.Equal(t, http.StatusNotFound, st)
	require.Contains(t, out["error"], `no api_key day limit for "demo"`)
	list = f.ok("GET", "/v1/admin/teams/research/spend-limits", "")
	require.Len(t, list["limits"], 2)
	require.Equal(t, []any{}, f.ok("GET", "/v1/admin/teams/nobody/spend-limits", "")["limits"], "no limits is an empty list")
}

func TestEveryCommittedChangeInvalidatesThatTeamsCacheOnly(t *testing.T) {
	f := newFixture(t)
	day, _ := calendar.ParseKey("20261015")
	month, _ := calendar.ParseKey("202610")
	cachedOf := func(team string) []string {
		return []string{
			spendcache.UsageKey(team, spend.Team, team, month.Period, month.Key),
			spendcache.UsageKey(team, spend.APIKey, "demo", day.Period, day.Key), spendcache.UsageKey(team, spend.APIKey, "demo", month.Period, month.Key),
			spendcache.UsageKey(team, spend.User, "alice", day.Period, day.Key), spendcache.UsageKey(team, spend.User, "alice", month.Period, month.Key),
		}
	}
	// "r*" is a glob to SCAN: unescaped it would match the other team's keys.
	const team, other = "r*", "research"
	f.ok("PUT", "/v1/admin/teams/r*/balance", `{"balance_usd":"10"}`)
	changes := []struct{ method, path, body string }{
		{"PUT", "/v1/admin/teams/r*/spend-limits/api_key/demo/day", `{"limit_usd":"5"}`},
		{"PUT", "/v1/admin/teams/r*/spend-limits/api_key/demo/day", `{"limit_usd":"6"}`},
		{"DELETE", "/v1/admin/teams/r*/spend-limits/api_key/demo/day", ``},
		{"PUT", "/v1/admin/teams/r*/balance", `{"balance_usd":"100.00"}`},
		{"POST", "/v1/admin/teams/r*/balance/top-up", `{"amount_usd":"25.00","id":"t1"}`},
		{"POST", "/v1/admin/teams/r*/balance/top-up", `{"amount_usd":"25.00","id":"t1"}`},
	}
	for _, c := range changes {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			f.warm(team, cachedOf(team)...)
			f.warm(other, cachedOf(other)...)
			f.ok(c.method, c.path, c.body)
			for _, k := range append(cachedOf(team), spendcache.PolicyKey(team), spendcache.BalanceKey(team)) {
				require.False(t, f.exists(k), "%s is deleted, so the spend cache reloads it from the ledger", k)
			}
			for _, k := range append(cachedOf(other), spendcache.PolicyKey(other), spendcache.BalanceKey(other)) {
				require.True(t, f.exists(k), "%s of another team is kept", k)
			}
		})
	}
	// A read changes nothing.
	f.warm(team, cachedOf(team)...)
	f.ok("GET", "/v1/admin/teams/r*/spend-limits", "")
	f.ok("GET", "/v1/admin/teams/r*/spend", "")
	f.ok("GET", "/v1/admin/teams/r*/balance", "")
	require.True(t, f.exists(spendcache.PolicyKey(team)))
	require.True(t, f.exists(cachedOf(team)[0]))
}

func TestABadLimitPathOrBodyIsRefusedAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	base := "/v1/admin/teams/research/spend-limits/"
	tests := []struct {
		name, path, body, want string
	}{
		{"unknown member", base + "api_key/k/day", `{"limit_usd":"5","limitusd":"6"}`, `unknown member "limitusd" (it takes limit_usd)`},
		{"repeated member", base + "api_key/k/day", `{"limit_usd":"500","limit_usd":"5"}`, `member "limit_usd" is repeated`},
		{"too precise", base + "api_key/k/day", `{"limit_usd":"0.0000000001"}`, "limit_usd: has more than 9 decimal places"},
		{"negative", base + "api_key/k/day", `{"limit_usd":"-5"}`, "limit_usd: must not be negative"},
		{"not a number", base + "api_key/k/day", `{"limit_usd":"five"}`, "limit_usd: must be a non-negative decimal USD amount"},
		{"empty amount", base + "api_key/k/day", `{"limit_usd":""}`, "limit_usd: must be a non-negative decimal USD amount"},
		{"too large", base + "api_key/k/day", `{"limit_usd":"9223372037"}`, "limit_usd: is too large"},
		{"wrong type", base + "api_key/k/day", `{"limit_usd":true}`, "limit_usd: must be decimal USD text"},
		{"missing", base + "api_key/k/day", `{}`, "body: limit_usd is required"},
		{"empty body", base + "api_key/k/day", ``, "body: not valid JSON"},
		{"trailing data", base + "api_key/k/day", `{"limit_usd":"5"} {}`, "body: not valid JSON"},
		{"array", base + "api_key/k/day", `[{"limit_usd":"5"}]`, "body: must be a JSON object"},
		{"unknown scope", base + "tenant/k/day", `{"limit_usd":"5"}`, `scope "tenant": must be team, api_key or user`},
		{"unknown period", base + "api_key/k/week", `{"limit_usd":"5"}`, `period "week": must be day or month`},
		{"team by day", base + "team/research/day", `{"limit_usd":"5"}`, "a team has a monthly limit only"},
		{"team of another", base + "team/other/month", `{"limit_usd":"5"}`, `a team limit's id is the team ("research")`},
		{"brace in team", "/v1/admin/teams/re%7Bs%7D/spend-limits/api_key/k/day", `{"limit_usd":"5"}`, "team: must not hold { or }"},
		{"control character", base + "user/a%0Ab/day", `{"limit_usd":"5"}`, "id: holds a control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, out := f.call("PUT", tt.path, tt.body)
			require.Equal(t, http.StatusBadRequest, st, "%v", out)
			require.Contains(t, out["error"], tt.want)
		})
	}
	for _, team := range []string{"research", "other", "re{s}"} {
		got, err := f.ledger.Policies(context.Background(), team)
		require.NoError(t, err)
		require.Empty(t, got, "no refused request wrote a limit")
	}
}

func TestACacheLoadThatRefilledTheOldPolicyJustAfterAChangeIsInvalidatedAgain(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = c.Close() })
	f := newFixtureWith(t, c, 300*time.Millisecond)
	month, _ := calendar.ParseKey("202610")
	counter := spendcache.UsageKey("research", spend.Team, "research", month.Period, month.Key)
	f.ok("PUT", "/v1/admin/teams/research/spend-limits/team/research/month", `{"limit_usd":"1"}`)
	// A load that read the ledger before the commit writes after the first delete.
	f.warm("research", counter)
	require.True(t, f.exists(spendcache.PolicyKey("research")))
	require.Eventually(t, func() bool { return !f.exists(spendcache.PolicyKey("research")) && !f.exists(counter) },
		3*time.Second, 20*time.Millisecond, "the second invalidation removes what the late load wrote")
}
