//go:build !wasip1

package admin

import (
	"context"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestABalanceIsSetReadAndToppedUpOncePerID(t *testing.T) {
	f := newFixture(t)
	path := "/v1/admin/teams/research/balance"
	st, out := f.call("GET", path, "")
	require.Equal(t, http.StatusNotFound, st)
	require.Contains(t, out["error"], "no balance set: it is not limited by one")
	st, out = f.call("POST", path+"/top-up", `{"amount_usd":"25.00","id":"t0"}`)
	require.Equal(t, http.StatusConflict, st, "a top-up must not start limiting a team that had no balance")
	require.Contains(t, out["error"], "set it first with PUT")

	require.Equal(t, map[string]any{"team": "research", "balance_usd": "100.00"}, f.ok("PUT", path, `{"balance_usd":"100.00"}`))
	require.Equal(t, map[string]any{"team": "research", "id": "t1", "applied": true, "balance_usd": "125.00"},
		f.ok("POST", path+"/top-up", `{"amount_usd":"25.00","id":"t1"}`))
	require.Equal(t, map[string]any{"team": "research", "id": "t1", "applied": false, "balance_usd": "125.00"},
		f.ok("POST", path+"/top-up", `{"amount_usd":"25.00","id":"t1"}`), "a retried top-up adds nothing")
	f.ok("POST", path+"/top-up", `{"amount_usd":"0.000000001","id":"t2"}`)
	f.ok("PUT", "/v1/admin/teams/other/balance", `{"balance_usd":"1"}`)
	st, out = f.call("POST", "/v1/admin/teams/other/balance/top-up", `{"amount_usd":"25.00","id":"t1"}`)
	require.Equal(t, http.StatusConflict, st, "another team's top-up id is no retry")
	require.Contains(t, out["error"], `top-up id "t1" was used for a top-up of another team`)
	require.Equal(t, "1.00", f.ok("GET", "/v1/admin/teams/other/balance", "")["balance_usd"])

	require.Equal(t, map[string]any{"team": "research", "balance_usd": "125.000000001", "cached_usd": nil},
		f.ok("GET", path, ""), "not cached until the spend cache loads it")
	require.NoError(t, f.redis.Set(context.Background(), spendcache.BalanceKey("research"), "-20000000", 0).Err())
	require.Equal(t, "-0.02", f.ok("GET", path, "")["cached_usd"], "the cache may run below zero after deductions")

	bal, ok, err := f.ledger.Balance(context.Background(), "research")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, usd(t, "125.000000001"), bal)
}

func TestABadBalanceOrTopUpBodyIsRefusedAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	path := "/v1/admin/teams/research/balance"
	f.ok("PUT", path, `{"balance_usd":"10"}`)
	tests := []struct {
		name, method, path, body, want string
	}{
		{"negative balance", "PUT", path, `{"balance_usd":"-1"}`, "balance_usd: must not be negative"},
		{"balance repeated", "PUT", path, `{"balance_usd":"1","balance_usd":"1"}`, `member "balance_usd" is repeated`},
		{"balance misspelt", "PUT", path, `{"balance":"1"}`, `unknown member "balance" (it takes balance_usd)`},
		{"zero top-up", "POST", path + "/top-up", `{"amount_usd":"0","id":"z"}`, "amount_usd: must be greater than 0"},
		{"top-up without id", "POST", path + "/top-up", `{"amount_usd":"1"}`, "body: id is required"},
		{"top-up empty id", "POST", path + "/top-up", `{"amount_usd":"1","id":""}`, "id: must not be empty"},
		{"top-up id a number", "POST", path + "/top-up", `{"amount_usd":"1","id":7}`, "id: must be a string"},
		{"top-up too precise", "POST", path + "/top-up", `{"amount_usd":"1.0000000001","id":"p"}`, "amount_usd: has more than 9 decimal places"},
		{"top-up extra member", "POST", path + "/top-up", `{"amount_usd":"1","id":"x","team":"other"}`, `unknown member "team"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, out := f.call(tt.method, tt.path, tt.body)
			require.Equal(t, http.StatusBadRequest, st, "%v", out)
			require.Contains(t, out["error"], tt.want)
		})
	}
	require.Equal(t, "10.00", f.ok("GET", path, "")["balance_usd"])
}
