//go:build !wasip1

package admin

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// The key names are the contract with the spend cache's loader: a name
// spelled otherwise here would delete nothing and leave a stale limit.
func TestTheCacheKeysAreTheSpendCachesLayout(t *testing.T) {
	require.Equal(t, "quota:{research}:spend:policy", policyKey("research"))
	require.Equal(t, "quota:{research}:balance", balanceKey("research"))
	for want, got := range map[string]string{
		"quota:{research}:spend:usage:team:month:202610":         usageKey("research", spend.Team, "research", calendar.Month, 202610),
		"quota:{research}:spend:usage:api_key:demo:day:20261015": usageKey("research", spend.APIKey, "demo", calendar.Day, 20261015),
		"quota:{research}:spend:usage:api_key:demo:month:202610": usageKey("research", spend.APIKey, "demo", calendar.Month, 202610),
		"quota:{research}:spend:usage:user:alice:day:20261015":   usageKey("research", spend.User, "alice", calendar.Day, 20261015),
		"quota:{research}:spend:usage:user:alice:month:202610":   usageKey("research", spend.User, "alice", calendar.Month, 202610),
		`quota:{r\*s\?\[x\]\\}:spend:usage:*`:                    usagePattern(`r*s?[x]\`),
		"quota:{research}:spend:usage:*":                         usagePattern("research"),
	} {
		require.Equal(t, want, got)
	}
}
