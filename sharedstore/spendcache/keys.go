//go:build !wasip1

// Package spendcache is the Redis half of the fleet spend limits: a cache
// of each team's policies, spend counters and balance that the admission
// reads in the same script as its token buckets (preflight), the
// settlement adds its estimate to (postflight), and the worker rewrites
// from PostgreSQL after each commit (refresh). PostgreSQL (package ledger)
// is the truth; every key here can be deleted at any time and is reloaded
// from it on the next miss.
//
// Amounts are nano-USD. Every usage key and the balance key is a plain
// string holding a decimal integer, so an operator can read it with
// redis-cli and the admin API can invalidate a team by deleting its keys.
package spendcache

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// NoTeam is the team id of calls that carry no team: their key and user
// counters are kept under it, in PostgreSQL and in Redis, like any team's.
const NoTeam = "_none"

// TeamOf is the team id a call is kept under (NoTeam for none).
func TeamOf(team string) string {
	if team == "" {
		return NoTeam
	}
	return team
}

// tag is the Redis Cluster hash tag of a team, so its policy, usage and
// balance keys sit in one slot and one script sees them all. A team whose
// name holds a brace would end the tag early; it is tagged by a hash of
// its name instead, and the name follows the tag so two teams never share
// a key.
func tag(team string) string {
	if !strings.ContainsAny(team, "{}") {
		return "quota:{" + team + "}"
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(team))
	return "quota:{#" + strconv.FormatUint(h.Sum64(), 16) + "}" + team
}

// PolicyKey is the hash caching a team's spend policies (see policyFields).
func PolicyKey(team string) string { return tag(team) + ":spend:policy" }

// BalanceKey is the team's cached balance: the ledger balance less the
// estimates not yet charged, less every estimate added since.
func BalanceKey(team string) string { return tag(team) + ":balance" }

// HeldKey is the hash of what the team's reservations in flight hold on
// each of its usage keys (field: the usage key, value: nano-USD); HoldsKey
// the hash of each reservation (field: hold id, value: its amount and
// usage keys); ExpiryKey the sorted set of hold ids by the Unix ms their
// reservation lapses at. They sit outside the usage pattern, so an admin
// invalidation (which deletes the counters, reloaded from the ledger)
// keeps what is in flight.
func HeldKey(team string) string { return tag(team) + ":spend:held" }

// HoldsKey: see HeldKey.
func HoldsKey(team string) string { return tag(team) + ":spend:holds" }

// ExpiryKey: see HeldKey.
func ExpiryKey(team string) string { return tag(team) + ":spend:holds:expiry" }

// UsageKey is one counter: quota:{<team>}:spend:usage:<scope>:<id>:<period>:<key>,
// except that a team's own counter has no id (quota:{<team>}:spend:usage:team:month:YYYYMM).
// key is YYYYMMDD for a day and YYYYMM for a month.
func UsageKey(team string, scope spend.Scope, id string, period calendar.Period, key uint32) string {
	var b strings.Builder
	b.Grow(len(team) + len(id) + 48)
	b.WriteString(tag(team))
	b.WriteString(":spend:usage:")
	b.WriteString(scope.String())
	b.WriteByte(':')
	if scope != spend.Team {
		b.WriteString(id)
		b.WriteByte(':')
	}
	b.WriteString(period.String())
	b.WriteByte(':')
	b.WriteString(strconv.FormatUint(uint64(key), 10))
	return b.String()
}

// UsagePattern matches every usage key of a team (SCAN MATCH), for an
// invalidation.
func UsagePattern(team string) string {
	t := tag(team)
	return globEscaper.Replace(t) + ":spend:usage:*"
}

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)

// slotKey is the usage key of one slot of a call.
func slotKey(team string, s spend.Slot, id string, w calendar.Window) string {
	return UsageKey(team, s.Scope(), id, s.Period(), w.Key)
}

// Fields of the policy hash: policyLoaded marks a loaded policy (so "no
// limits" is cached too), policyBalance is "1" when the team has a balance
// (the balance key then must exist), and each limit is a field
// "<slot>:<id>" ("api_key_day:k-1") holding its nano-USD.
const (
	policyLoaded  = "_"
	policyBalance = "b"
)

func policyField(s spend.Slot, id string) string { return s.String() + ":" + id }
