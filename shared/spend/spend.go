// Package spend is the vocabulary of USD spend limits shared by the
// configuration, the filter and the stores: the scopes and periods a limit
// is set for, the limits that apply to one request, and the preflight rule.
//
// The rules: only configured limits are checked and counted; a scope and
// period without a limit is unlimited, and a limit of 0 blocks. Every
// configured limit must pass: a request is refused when the usage of any
// limited period has reached its limit (usage ≥ limit), without calling
// the backend.
//
// By default a request also reserves its maximum cost (its input estimate
// and output ceiling, priced) at admission, as its tokens are: it is
// refused when that cost does not fit what is left (usage + reserved +
// cost > limit), and the reservation is settled to the priced usage at
// the end, or released. Concurrent requests then overshoot a limit by at
// most what one of them costs beyond its reservation. With reservation off
// (spend_limits.reserve false) the cost is added only after the response,
// and concurrent requests may overshoot a limit by what they cost together.
//
// Compiled into the .wasm: no fmt, no time.
package spend

import (
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
)

// Scope is who a spend counter belongs to.
type Scope uint8

// The scopes. The zero Scope is none.
const (
	Team Scope = iota + 1
	APIKey
	User
)

// String is the scope's name in bodies, metrics and ledger keys.
func (s Scope) String() string {
	switch s {
	case Team:
		return "team"
	case APIKey:
		return "api_key"
	case User:
		return "user"
	}
	return "none"
}

// Slot is one scope and period a limit can be configured for. Teams have a
// monthly limit only.
type Slot uint8

// The slots, in array order.
const (
	TeamMonth Slot = iota
	KeyDay
	KeyMonth
	UserDay
	UserMonth
	// NumSlots is the number of slots (the length of Limits and Usage).
	NumSlots
)

var slotScopes = [NumSlots]Scope{Team, APIKey, APIKey, User, User}

var slotPeriods = [NumSlots]calendar.Period{calendar.Month, calendar.Day, calendar.Month, calendar.Day, calendar.Month}

// labels name a slot in the refusal message: "<label> spend limit exceeded."
var labels = [NumSlots]string{"Team monthly", "API Key daily", "API Key monthly", "User daily", "User monthly"}

// Scope is the slot's scope.
func (s Slot) Scope() Scope {
	if s >= NumSlots {
		return 0
	}
	return slotScopes[s]
}

// Period is the slot's period.
func (s Slot) Period() calendar.Period {
	if s >= NumSlots {
		return 0
	}
	return slotPeriods[s]
}

// Label is the slot as the refusal message names it ("API Key daily").
func (s Slot) Label() string {
	if s >= NumSlots {
		return ""
	}
	return labels[s]
}

// String is "<scope>_<period>" ("api_key_day").
func (s Slot) String() string {
	if s >= NumSlots {
		return "none"
	}
	return s.Scope().String() + "_" + s.Period().String()
}

// Limit is one slot's configured limit. Set false is "no limit" (the slot
// is neither checked nor counted); Set with Amount 0 blocks every request.
type Limit struct {
	Amount money.Amount
	Set    bool
}

// Policy is the limits that apply to one request and the identities the
// counters are kept under. A scope without an identity (no team, no user,
// no key) has no limit in the policy.
type Policy struct {
	Limits [NumSlots]Limit
	// Team, APIKey and User identify the counters: APIKey is the key's
	// configured id, or its hash when it has none.
	Team, APIKey, User string
}

// Any reports whether any limit applies; when none does, the caller skips
// the usage lookup and the postflight entirely.
func (p *Policy) Any() bool {
	for _, l := range p.Limits {
		if l.Set {
			return true
		}
	}
	return false
}

// ID is the identity the slot's counter is kept under.
func (p *Policy) ID(s Slot) string {
	switch s.Scope() {
	case Team:
		return p.Team
	case APIKey:
		return p.APIKey
	case User:
		return p.User
	}
	return ""
}

// Remaining is what a fleet store's verdict left of each slot and of the
// team's balance after the call it answered: the filter keeps the last one
// it was given, so that while the store cannot answer it still refuses
// what was exhausted and reserves against what remained. Set false: the
// store knows no limit for the slot (or the team has no balance).
type Remaining struct {
	Left    [NumSlots]Limit
	Balance Limit
}

// Any reports whether anything is limited.
func (r *Remaining) Any() bool {
	for _, l := range r.Left {
		if l.Set {
			return true
		}
	}
	return r.Balance.Set
}

// Usage is the spend so far of each slot, in the periods of the call's
// start; slots without a limit are ignored.
type Usage [NumSlots]money.Amount

// Exceeded is the limit that refused a request and the usage it met.
// Balance marks a refusal by the team's exhausted account balance instead
// (a fleet store's): Slot and Limit are then meaningless.
type Exceeded struct {
	Slot        Slot
	Limit, Used money.Amount
	Balance     bool
}

// reportOrder is which exceeded limit a refusal names when several are
// exhausted at once: months before days, because the request cannot pass
// before the last of them resets and a month never resets before a day;
// within a period the caller's own key first, because only that scope may
// show its limit and usage.
var reportOrder = [NumSlots]Slot{KeyMonth, UserMonth, TeamMonth, KeyDay, UserDay}

// Check is the preflight: it reports the limit that refuses the request
// (see reportOrder), or ok true when every configured limit still has
// room (usage < limit).
func Check(p *Policy, used *Usage) (ex Exceeded, ok bool) {
	return CheckReserve(p, used, 0)
}

// CheckReserve is Check for a request that reserves cost: a limit also
// refuses when cost does not fit what is left (usage + cost > limit). used
// counts what is spent and what other requests hold. A cost of 0 is Check.
func CheckReserve(p *Policy, used *Usage, cost money.Amount) (ex Exceeded, ok bool) {
	for _, s := range reportOrder {
		l := p.Limits[s]
		if l.Set && !Fits(used[s], cost, l.Amount) {
			return Exceeded{Slot: s, Limit: l.Amount, Used: used[s]}, false
		}
	}
	return Exceeded{}, true
}

// Fits reports whether a request costing cost may pass a limit of which
// used is taken: something is left (used < limit, so a limit of 0 blocks)
// and the cost fits in it. It never overflows.
func Fits(used, cost, limit money.Amount) bool {
	return used < limit && cost <= limit-used
}
