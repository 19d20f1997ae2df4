package config

import (
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// SpendLimits are the USD limits of teams and users, per UTC calendar
// period. Keys carry their own limits in api_keys[] (spend_limit_day_usd,
// spend_limit_month_usd) and their tier's in
// rate_limiting.tier_overrides.<tier> (cost_per_day_usd,
// cost_per_month_usd). An absent limit is no limit; 0 blocks.
type SpendLimits struct {
	Teams map[string]TeamSpendLimits `json:"teams,omitempty" desc:"USD limits by team name (api_keys[].team or the trusted team identity)"`
	Users map[string]UserSpendLimits `json:"users,omitempty" desc:"USD limits by user name (api_keys[].user or the trusted user identity)"`
	// Reserve, true by default, holds each request's maximum cost at
	// admission as its tokens are held, so concurrent requests cannot
	// overshoot a limit by more than one request's cost beyond its hold.
	Reserve *bool `json:"reserve,omitempty" desc:"true (default): hold each request's maximum cost (input estimate and output ceiling, priced) at admission and refuse what does not fit; false: only check that the spend so far is below the limit"`
}

// TeamSpendLimits are one team's limits; teams have a monthly limit only.
type TeamSpendLimits struct {
	MonthUSD *USD `json:"month_usd,omitempty" desc:"USD the team may spend per UTC calendar month; 0 blocks"`
}

// UserSpendLimits are one user's limits.
type UserSpendLimits struct {
	DayUSD   *USD `json:"day_usd,omitempty" desc:"USD the user may spend per UTC day; 0 blocks"`
	MonthUSD *USD `json:"month_usd,omitempty" desc:"USD the user may spend per UTC calendar month; 0 blocks"`
}

// spendRuntime is the compiled spend configuration: limits by identity and
// the price list. Keys are by hash, with their tier's limits already
// merged under their own.
type spendRuntime struct {
	teams  map[string]spend.Limit // month
	users  map[string][2]spend.Limit
	keys   map[string][2]spend.Limit // [day, month]
	any    bool
	prices *pricing.Table
	// checkOnly is spend_limits.reserve false: nothing is reserved.
	checkOnly bool
}

// SpendPolicy is the spend limits that apply to a request of key k (the
// zero KeyInfo for a request without a key) by user and team, the
// identities the filter resolved ("" = none), and the ids their counters
// are kept under. A key's own limit wins over its tier's, period by
// period; a key without an id is counted under its hash. A scope without
// an identity has no limit.
func (r *Runtime) SpendPolicy(k KeyInfo, user, team string) spend.Policy {
	p := spend.Policy{Team: team, User: user, APIKey: k.ID}
	if p.APIKey == "" {
		p.APIKey = k.Hash
	}
	s := &r.spend
	if !s.any {
		return p
	}
	if team != "" {
		p.Limits[spend.TeamMonth] = s.teams[team]
	}
	if user != "" {
		u := s.users[user]
		p.Limits[spend.UserDay], p.Limits[spend.UserMonth] = u[0], u[1]
	}
	if k.Known {
		kl := s.keys[k.Hash]
		p.Limits[spend.KeyDay], p.Limits[spend.KeyMonth] = kl[0], kl[1]
	}
	return p
}

// HasSpendLimits reports whether any spend limit is configured, so the
// filter can skip pricing and the spend store otherwise.
func (r *Runtime) HasSpendLimits() bool { return r.spend.any }

// SpendReserve reports whether a request reserves its maximum cost at
// admission (spend_limits.reserve, default true).
func (r *Runtime) SpendReserve() bool { return !r.spend.checkOnly }

// FleetSpend reports whether every request's spend goes to the fleet store
// (rate_limiting.redis.fleet_spend), for the limits stored there.
func (r *Runtime) FleetSpend() bool { return r.Redis.FleetSpend }

// Price is the pricing entry of a client-facing model: its own, else the
// default. ok false means "not priced": with a spend limit in force the
// filter refuses the request (model_not_priced) rather than charge $0.
func (r *Runtime) Price(model string) (pricing.Entry, bool) {
	return r.spend.prices.Lookup(model)
}

// PriceEntry is Price with the name of the entry used: the model's own
// spelling, the entry it resolves to (gpt-4o for gpt-4o-2024-08-06, see
// package modelname), or "default".
func (r *Runtime) PriceEntry(model string) (string, pricing.Entry, bool) {
	return r.spend.prices.Resolve(model)
}

// Prices is the compiled price list (nil when the config has none).
func (r *Runtime) Prices() *pricing.Table { return r.spend.prices }

func (c *Config) compileSpend() spendRuntime {
	s := spendRuntime{
		teams:  map[string]spend.Limit{},
		users:  map[string][2]spend.Limit{},
		keys:   map[string][2]spend.Limit{},
		prices: c.compilePricing(),
	}
	set := func(p *USD) spend.Limit {
		a, ok := limitOf(p)
		s.any = s.any || ok
		return spend.Limit{Amount: a, Set: ok}
	}
	if sl := c.SpendLimits; sl != nil {
		s.checkOnly = sl.Reserve != nil && !*sl.Reserve
		for name, t := range sl.Teams {
			if l := set(t.MonthUSD); l.Set {
				s.teams[name] = l
			}
		}
		for name, u := range sl.Users {
			if l := [2]spend.Limit{set(u.DayUSD), set(u.MonthUSD)}; l[0].Set || l[1].Set {
				s.users[name] = l
			}
		}
	}
	for i := range c.APIKeys {
		k := &c.APIKeys[i]
		h, err := identity.Normalize(k.Key)
		if err != nil {
			continue // Compile reports it
		}
		day, month := k.SpendLimitDayUSD, k.SpendLimitMonthUSD
		if t, ok := c.RateLimiting.TierOverrides[k.Tier]; ok && k.Tier != "" {
			if day == nil {
				day = t.CostPerDayUSD
			}
			if month == nil {
				month = t.CostPerMonthUSD
			}
		}
		if l := [2]spend.Limit{set(day), set(month)}; l[0].Set || l[1].Set {
			s.keys[h] = l
		}
	}
	return s
}

// spendConfigured reports whether any spend limit is written anywhere.
func (c *Config) spendConfigured() bool {
	if sl := c.SpendLimits; sl != nil {
		for _, t := range sl.Teams {
			if t.MonthUSD != nil {
				return true
			}
		}
		for _, u := range sl.Users {
			if u.DayUSD != nil || u.MonthUSD != nil {
				return true
			}
		}
	}
	for _, k := range c.APIKeys {
		if k.SpendLimitDayUSD != nil || k.SpendLimitMonthUSD != nil {
			return true
		}
	}
	for _, t := range c.RateLimiting.TierOverrides {
		if t.CostPerDayUSD != nil || t.CostPerMonthUSD != nil {
			return true
		}
	}
	return false
}

// identitySources reports whether any request can carry a user and a team.
func (c *Config) identitySources() (users, teams bool) {
	for _, k := range c.APIKeys {
		users = users || k.User != ""
		teams = teams || k.Team != ""
	}
	users = users || c.Identity.TrustedUserHeader != "" || len(c.Identity.TrustedUserMetadata) > 0
	teams = teams || c.Identity.TrustedTeamHeader != "" || len(c.Identity.TrustedTeamMetadata) > 0
	return users, teams
}

// validateSpend checks the spend limits and the price list. A limit whose
// scope no request can carry is an error: it would look enforced and never
// apply.
func (c *Config) validateSpend(v *validator) {
	c.validatePricing(v)
	sl := c.SpendLimits
	if sl == nil {
		return
	}
	users, teams := c.identitySources()
	var teamLimits, userLimits bool
	for _, t := range sl.Teams {
		teamLimits = teamLimits || t.MonthUSD != nil
	}
	for _, u := range sl.Users {
		userLimits = userLimits || u.DayUSD != nil || u.MonthUSD != nil
	}
	if teamLimits && !teams {
		v.add("spend_limits.teams", "no request can carry a team (set api_keys[].team, identity.trusted_team_header or identity.trusted_team_metadata), so these limits would never apply")
	}
	if userLimits && !users {
		v.add("spend_limits.users", "no request can carry a user (set api_keys[].user, identity.trusted_user_header or identity.trusted_user_metadata), so these limits would never apply")
	}
	for _, name := range sortedMapKeys(sl.Teams) {
		if name == "" {
			v.add(mapPath("spend_limits.teams", name), "team name must not be empty")
		}
	}
	for _, name := range sortedMapKeys(sl.Users) {
		if name == "" {
			v.add(mapPath("spend_limits.users", name), "user name must not be empty")
		}
	}
}

// spendWarnings are the spend settings that load but may not do what the
// operator meant.
func (c *Config) spendWarnings() []string {
	if !c.spendConfigured() {
		return nil
	}
	var w []string
	if c.RateLimiting.Storage == StorageRedis {
		w = append(w, "spend_limits: with storage \"redis\" the sharedstore service checks and counts spend; one that answers an admission without checking spend is treated as unavailable"+
			" (503 spend_store_unavailable, or the per-Envoy counters with fallback_to_memory), never as \"no limit\"")
	}
	if c.RateLimiting.Storage != StorageRedis {
		w = append(w, "spend_limits: with storage \""+c.RateLimiting.Storage+"\" spend is counted per Envoy in local memory:"+
			" N Envoys admit up to N times each limit, and the counters start from $0 after a restart; storage \"redis\" keeps one durable ledger for the fleet")
	}
	if _, ok := c.Pricing[DefaultPriceEntry]; !ok {
		w = append(w, "pricing: no \"default\" entry, so a request under a spend limit for a model without its own pricing entry is refused (400 model_not_priced)")
	}
	if sl := c.SpendLimits; sl != nil {
		named := map[string]bool{}
		for _, k := range c.APIKeys {
			named["t:"+k.Team], named["u:"+k.User] = true, true
		}
		id := c.Identity
		teamFromRequest := id.TrustedTeamHeader != "" || len(id.TrustedTeamMetadata) > 0
		userFromRequest := id.TrustedUserHeader != "" || len(id.TrustedUserMetadata) > 0
		for _, name := range sortedMapKeys(sl.Teams) {
			if name != "" && !teamFromRequest && !named["t:"+name] {
				w = append(w, mapPath("spend_limits.teams", name)+": no api_keys entry names this team, so its limit never applies")
			}
		}
		for _, name := range sortedMapKeys(sl.Users) {
			if name != "" && !userFromRequest && !named["u:"+name] {
				w = append(w, mapPath("spend_limits.users", name)+": no api_keys entry names this user, so its limits never apply")
			}
		}
	}
	return w
}
