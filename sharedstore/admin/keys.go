//go:build !wasip1

package admin

import (
	"strconv"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// The Redis names of a team's spend cache. Every name carries the team as
// the hash tag {<team>}, so on a Redis Cluster all of a team's keys live in
// one slot. Usage keys and the balance key hold a decimal integer of
// nano-USD; the spend cache's loader refills any of them that is absent
// from the ledger.

// policyKey is the team's cached spend limits.
func policyKey(team string) string { return "quota:{" + team + "}:spend:policy" }

// balanceKey is the team's cached account balance.
func balanceKey(team string) string { return "quota:{" + team + "}:balance" }

// usageKey is the cached spend of one scope and id in one period (key
// YYYYMMDD for a day, YYYYMM for a month):
// quota:{t}:spend:usage:team:month:YYYYMM for the team (its id is the
// team), …:usage:api_key:<id>:day:YYYYMMDD and so on for keys and users.
// Its signature is the spend cache's own, so either can stand for the other.
func usageKey(team string, scope spend.Scope, id string, period calendar.Period, key uint32) string {
	var b strings.Builder
	b.WriteString("quota:{")
	b.WriteString(team)
	b.WriteString("}:spend:usage:")
	b.WriteString(scope.String())
	if scope != spend.Team {
		b.WriteByte(':')
		b.WriteString(id)
	}
	b.WriteByte(':')
	b.WriteString(period.String())
	b.WriteByte(':')
	b.WriteString(strconv.FormatUint(uint64(key), 10))
	return b.String()
}

// usagePattern is the SCAN MATCH pattern of every usage key of the team,
// with the glob characters a team name may hold escaped.
func usagePattern(team string) string {
	return "quota:{" + escapeGlob(team) + "}:spend:usage:*"
}

func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
