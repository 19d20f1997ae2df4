//go:build !wasip1

package admin

import (
	"context"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

// every route, with a body it would accept.
var routes = []struct{ method, path, body string }{
	{"PUT", "/v1/admin/teams/t/spend-limits/api_key/k/day", `{"limit_usd":"5"}`},
	{"DELETE", "/v1/admin/teams/t/spend-limits/api_key/k/day", ``},
	{"GET", "/v1/admin/teams/t/spend-limits", ``},
	{"GET", "/v1/admin/teams/t/spend?period=202610", ``},
	{"PUT", "/v1/admin/prices", `{"effective_from":"2026-10-01T00:00:00Z","pricing":{"m":{"input":"1","output":"1"}}}`},
	{"GET", "/v1/admin/prices", ``},
	{"PUT", "/v1/admin/teams/t/balance", `{"balance_usd":"1"}`},
	{"GET", "/v1/admin/teams/t/balance", ``},
	{"POST", "/v1/admin/teams/t/balance/top-up", `{"amount_usd":"1","id":"x"}`},
	{"GET", "/v1/admin/no-such-route", ``},
}

func TestEveryAdminRouteRefusesAnyButTheAdminTokenAndNeverLogsIt(t *testing.T) {
	f := newFixture(t)
	for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer data-plane-token", "Bearer " + adminToken + "x",
		"bearer " + adminToken, adminToken, "Basic " + adminToken} {
		for _, r := range routes {
			st, out := f.callAs(auth, r.method, r.path, r.body)
			require.Equal(t, http.StatusUnauthorized, st, "%q %s %s", auth, r.method, r.path)
			require.Contains(t, out["error"], "unauthorized")
		}
	}
	ps, err := f.ledger.Policies(context.Background(), "t")
	require.NoError(t, err)
	require.Empty(t, ps, "no refused call changed anything")
	for _, r := range routes {
		st, _ := f.call(r.method, r.path, r.body)
		require.NotEqual(t, http.StatusUnauthorized, st, "%s %s", r.method, r.path)
	}
	st, out := f.call("GET", "/v1/admin/no-such-route", "")
	require.Equal(t, http.StatusNotFound, st)
	require.Contains(t, out["error"], "no admin route")
	st, _ = f.call("PATCH", "/v1/admin/prices", "")
	require.Equal(t, http.StatusMethodNotAllowed, st)

	logs := f.logs.String()
	require.Contains(t, logs, `"msg":"admin: spend limit set"`)
	require.NotContains(t, logs, adminToken)
	require.NotContains(t, logs, "data-plane-token")
}

func TestAChangeCommittedWhileRedisIsDownAnswers503CommittedAndARetryCompletesIt(t *testing.T) {
	addr := redistest.Start(t)
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = down.Close() })
	f := newFixtureOn(t, down)
	st, out := f.call("PUT", "/v1/admin/teams/t/spend-limits/user/u/day", `{"limit_usd":"3"}`)
	require.Equal(t, http.StatusServiceUnavailable, st)
	require.Equal(t, true, out["committed"])
	require.Contains(t, out["error"], "repeat the request")
	ps, err := f.ledger.Policies(context.Background(), "t")
	require.NoError(t, err)
	require.Equal(t, []ledger.Policy{{Scope: spend.User, ID: "u", Period: calendar.Day, Limit: usd(t, "3")}}, ps)

	// The ledger's reads still answer, the cache marked unavailable.
	out = f.ok("GET", "/v1/admin/teams/t/spend?period=20261015", "")
	require.Equal(t, true, out["cache_unavailable"])
	require.Equal(t, "3.00", figures(out)["user/u"]["limit_usd"])

	// The same request on a reachable Redis completes the invalidation.
	up := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = up.Close() })
	f.redis = up
	s, err := New(Config{Ledger: f.ledger, Redis: up, Token: adminToken})
	require.NoError(t, err)
	f.url = serve(t, s)
	f.warm("t")
	f.ok("PUT", "/v1/admin/teams/t/spend-limits/user/u/day", `{"limit_usd":"3"}`)
	require.False(t, f.exists(spendcache.PolicyKey("t")))
}

func TestOnARedisClusterATeamsKeysAreInvalidatedOnTheNodeThatHoldsThem(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.StartCluster(t, 3)})
	t.Cleanup(func() { _ = c.Close() })
	f := newFixtureOn(t, c)
	month, _ := calendar.ParseKey("202610")
	var teams []string
	for i := 0; i < 12; i++ { // enough teams to land on every node
		teams = append(teams, "team-"+strings.Repeat("x", i))
	}
	for _, team := range teams {
		f.warm(team, spendcache.UsageKey(team, spend.Team, team, month.Period, month.Key), spendcache.UsageKey(team, spend.User, "u", month.Period, month.Key))
	}
	for _, team := range teams[:6] {
		f.ok("PUT", "/v1/admin/teams/"+team+"/spend-limits/team/"+team+"/month", `{"limit_usd":"1"}`)
	}
	for i, team := range teams {
		for _, k := range []string{spendcache.PolicyKey(team), spendcache.BalanceKey(team), spendcache.UsageKey(team, spend.Team, team, month.Period, month.Key), spendcache.UsageKey(team, spend.User, "u", month.Period, month.Key)} {
			require.Equal(t, i >= 6, f.exists(k), k)
		}
	}
	out := f.ok("GET", "/v1/admin/teams/"+teams[7]+"/spend?period=202610", "")
	require.Empty(t, out["figures"])
	require.NotContains(t, out, "cache_unavailable")
}

func TestNewRefusesAnEmptyTokenOrMissingStores(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for name, cfg := range map[string]Config{
		"no token":  {Ledger: &ledger.Ledger{}, Redis: c},
		"no ledger": {Redis: c, Token: "x"},
		"no redis":  {Ledger: &ledger.Ledger{}, Token: "x"},
	} {
		_, err := New(cfg)
		require.Error(t, err, name)
	}
}

func TestCloseCancelsTheSecondInvalidationsStillWaiting(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = c.Close() })
	pool := newFixtureOn(t, c).pool
	s, err := New(Config{Ledger: ledger.New(pool), Redis: c, Token: adminToken, Reinvalidate: 200 * time.Millisecond})
	require.NoError(t, err)
	url := serve(t, s)
	req, err := http.NewRequest("PUT", url+"/v1/admin/teams/t/balance", strings.NewReader(`{"balance_usd":"1"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s.Close()
	require.NoError(t, c.Set(ctx, spendcache.BalanceKey("t"), "1", 0).Err())
	time.Sleep(400 * time.Millisecond)
	n, err := c.Exists(ctx, spendcache.BalanceKey("t")).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "no invalidation ran after Close")
}

func TestTheAdminRootListsEveryRouteWithWhatItDoes(t *testing.T) {
	f := newFixture(t)
	st, _ := f.callAs("", "GET", "/v1/admin/", "")
	require.Equal(t, http.StatusUnauthorized, st, "the list is behind the admin token too")
	st, out := f.call("GET", "/v1/admin/", "")
	require.Equal(t, http.StatusOK, st)
	listed := map[string]bool{}
	for _, r := range out["routes"].([]any) {
		m := r.(map[string]any)
		require.NotEmpty(t, m["what"], "%v", m)
		listed[m["method"].(string)+" "+m["path"].(string)] = true
	}
	s, err := New(Config{Token: adminToken, Ledger: f.ledger, Redis: f.redis})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.Len(t, listed, len(s.patterns))
	for _, p := range s.patterns {
		require.NotEmpty(t, routeDocs[p], "route %s has a line in routeDocs", p)
		require.True(t, listed[strings.TrimSuffix(p, "{$}")], "%s is listed", p)
	}
	for _, r := range routes {
		if r.path != "/v1/admin/no-such-route" {
			path, _, _ := strings.Cut(r.path, "?")
			require.True(t, anyPatternMatches(listed, r.method, path), "%s %s", r.method, r.path)
		}
	}
	st, _ = f.call("GET", "/v1/admin/nope", "")
	require.Equal(t, http.StatusNotFound, st, "only the root itself lists")
}

// anyPatternMatches reports whether a concrete path is one of the listed
// patterns, {name} segments matching any one segment.
func anyPatternMatches(listed map[string]bool, method, path string) bool {
	for p := range listed {
		m, pp, _ := strings.Cut(p, " ")
		if m != method {
			continue
		}
		a, b := strings.Split(pp, "/"), strings.Split(path, "/")
		if len(a) != len(b) {
			continue
		}
		ok := true
		for i := range a {
			ok = ok && (a[i] == b[i] || strings.HasPrefix(a[i], "{"))
		}
		if ok {
			return true
		}
	}
	return false
}
