package spendcache

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

func TestKeysFollowTheLayoutTheAdminAPIInvalidates(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{PolicyKey("eng"), "quota:{eng}:spend:policy"},
		{BalanceKey("eng"), "quota:{eng}:balance"},
		{UsageKey("eng", spend.Team, "eng", calendar.Month, 202609), "quota:{eng}:spend:usage:team:month:202609"},
		{UsageKey("eng", spend.APIKey, "k-1", calendar.Day, 20260908), "quota:{eng}:spend:usage:api_key:k-1:day:20260908"},
		{UsageKey("eng", spend.APIKey, "k-1", calendar.Month, 202609), "quota:{eng}:spend:usage:api_key:k-1:month:202609"},
		{UsageKey("eng", spend.User, "alice", calendar.Day, 20260908), "quota:{eng}:spend:usage:user:alice:day:20260908"},
		{UsageKey("eng", spend.User, "alice", calendar.Month, 202609), "quota:{eng}:spend:usage:user:alice:month:202609"},
		{UsagePattern("eng"), "quota:{eng}:spend:usage:*"},
		{UsagePattern("a*b"), `quota:{a\*b}:spend:usage:*`},
		{UsagePattern(`a\b[c]?`), `quota:{a\\b\[c\]\?}:spend:usage:*`},
		{PolicyKey(TeamOf("")), "quota:{_none}:spend:policy"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.got)
	}
}

func TestATeamWithABraceKeepsItsKeysInOneSlotAndApartFromOthers(t *testing.T) {
	a, b := PolicyKey("x}y"), PolicyKey("x{y")
	require.NotEqual(t, a, b)
	for _, k := range []string{a, BalanceKey("x}y"), UsageKey("x}y", spend.User, "u", calendar.Day, 20260908)} {
		require.Equal(t, hashTag(a), hashTag(k), k)
	}
}

// hashTag is what Redis Cluster hashes: the text between the first { and
// the next }.
func hashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					return key[i+1 : j]
				}
			}
		}
	}
	return key
}
