package config

import "strings"

// Warnings lists settings that load but probably do not do what the operator
// meant. Each names its JSON path.
func (c *Config) Warnings() []string {
	var w []string
	rl := &c.RateLimiting
	l := &rl.Limits

	if b := l.PerBackend; b != nil {
		for _, f := range []struct {
			name string
			v    *Int
		}{{"tokens_per_minute", b.TokensPerMinute}, {"tokens_per_day", b.TokensPerDay}} {
			if intVal(f.v) != 0 {
				w = append(w, "rate_limiting.limits.per_backend."+f.name+": per_backend is a selection-time dimension, so a token budget there has nowhere to attach and has no effect")
			}
		}
	}

	w = append(w, c.windowDurationWarnings()...)

	minuteSet, daySet := c.dimensionBudgets()
	hint := rl.BudgetDivision != nil && rl.BudgetDivision.Replicas != nil
	var shareMin, shareDay bool
	if s := c.DeploymentTokenBudget; s != nil {
		shareMin, shareDay = s.ShareTokensPerMinute != nil, s.ShareTokensPerDay != nil
	}
	if rl.Storage != StorageRedis && !hint {
		var periods []string
		if minuteSet && !shareMin {
			periods = append(periods, "tokens_per_minute")
		}
		if daySet && !shareDay {
			periods = append(periods, "tokens_per_day")
		}
		if len(periods) > 0 {
			w = append(w, "rate_limiting: an in-memory deployment enforces its "+strings.Join(periods, " and ")+
				" budgets per replica, so N replicas admit up to N times the configured total; set the config hint"+
				" rate_limiting.budget_division.replicas (1 for a single replica), or enroll with a Hub that pushes a"+
				" share in deployment_token_budget (or use storage \"redis\")")
		}
	}
	if hint && rl.Storage == StorageRedis {
		if _, sizesFallback := fallbackDivider(c); sizesFallback {
			w = append(w, "rate_limiting.budget_division: under storage \"redis\" the shared buckets carry the deployment"+
				" total, so the hint does not divide them; it sizes the replica-local buckets a replica admits on while"+
				" the store is unreachable (fallback_to_memory), so an outage admits about the configured total across"+
				" the fleet instead of that total on every replica; a deployment_token_budget share still applies to both")
		} else {
			w = append(w, "rate_limiting.budget_division: inert while storage is \"redis\" (the shared buckets already carry"+
				" the deployment total, and with fallback_to_memory false or replicas 1 no replica-local bucket is"+
				" divided); a deployment_token_budget share still applies")
		}
	}
	if shareMin && !minuteSet {
		w = append(w, "deployment_token_budget.share_tokens_per_minute: no token dimension sets tokens_per_minute, so the share has no effect")
	}
	if shareDay && !daySet {
		w = append(w, "deployment_token_budget.share_tokens_per_day: no token dimension sets tokens_per_day, so the share has no effect")
	}
	if c.onlyKeyTokenBudget() && c.Identity.MissingAPIKey != MissingKeyRefuse {
		w = append(w, "identity.missing_api_key: per_api_key is the only token budget and a request without a key skips"+
			" it, so such requests are unlimited; set identity.missing_api_key to \"refuse\" or add a global budget")
	}
	if rl.Redis != nil && rl.Storage != StorageRedis {
		w = append(w, "rate_limiting.redis: ignored while storage is \""+rl.Storage+"\"")
	}

	for i, k := range c.APIKeys {
		if k.Tier == "" {
			continue
		}
		if _, ok := rl.TierOverrides[k.Tier]; !ok {
			w = append(w, "api_keys["+formatInt(int64(i))+"].tier: no rate_limiting.tier_overrides entry for \""+k.Tier+
				"\", so the key gets the per_api_key defaults")
		}
	}

	var users, teams bool
	for _, k := range c.APIKeys {
		users = users || k.User != ""
		teams = teams || k.Team != ""
	}
	users = users || len(c.Identity.TrustedUserMetadata) > 0
	teams = teams || len(c.Identity.TrustedTeamMetadata) > 0
	if configured(l.PerUser) && c.Identity.TrustedUserHeader == "" && !users {
		w = append(w, "rate_limiting.limits.per_user: no request can carry a user (set identity.trusted_user_header or api_keys[].user), so these limits never apply")
	}
	if configured(l.PerTeam) && c.Identity.TrustedTeamHeader == "" && !teams {
		w = append(w, "rate_limiting.limits.per_team: no request can carry a team (set identity.trusted_team_header or api_keys[].team), so these limits never apply")
	}
	w = append(w, c.spendWarnings()...)
	w = append(w, c.fleetSpendWarnings()...)
	w = append(w, c.coverageWarnings()...)
	return w
}

// windowDurationWarnings name every window_duration written: it loads, and
// does nothing.
func (c *Config) windowDurationWarnings() []string {
	var w []string
	see := func(path string, s *RateLimitSettings) {
		if s != nil && s.WindowDuration != nil {
			w = append(w, path+".window_duration: has no effect: a request rate refills continuously at requests_per_second"+
				" up to burst_capacity, and token budgets have fixed periods (tokens_per_minute, tokens_per_day)")
		}
	}
	l := &c.RateLimiting.Limits
	for _, d := range []struct {
		name string
		s    *RateLimitSettings
	}{{"global", l.Global}, {"per_client", l.PerClient}, {"per_api_key", l.PerAPIKey}, {"per_user", l.PerUser},
		{"per_team", l.PerTeam}, {"per_backend", l.PerBackend}} {
		see("rate_limiting.limits."+d.name, d.s)
	}
	for _, name := range sortedMapKeys(l.PerModel) {
		s := l.PerModel[name]
		see(mapPath("rate_limiting.limits.per_model", name), &s)
	}
	for _, tier := range sortedMapKeys(c.RateLimiting.TierOverrides) {
		see(joinPath(mapPath("rate_limiting.tier_overrides", tier), "per_api_key"), c.RateLimiting.TierOverrides[tier].PerAPIKey)
	}
	return w
}

// fleetSpendWarnings name the ways a redis deployment leaves the limits and
// balances stored in sharedstore's ledger (set through its admin API)
// without effect on this filter's requests.
func (c *Config) fleetSpendWarnings() []string {
	rl := &c.RateLimiting
	if rl.Storage != StorageRedis {
		return nil
	}
	optOut := rl.Redis != nil && rl.Redis.FleetSpend != nil && !*rl.Redis.FleetSpend
	switch {
	case optOut:
		return []string{"rate_limiting.redis.fleet_spend: false, so the team limits and balances set through sharedstore's admin API" +
			" (/v1/admin/teams/{team}/spend-limits/..., /v1/admin/teams/{team}/balance) do not apply to this filter's requests;" +
			" only the spend limits written in this config do"}
	case len(c.Pricing) == 0:
		return []string{"pricing: absent under storage \"redis\", so no request can be priced and the limits and balances stored in" +
			" sharedstore's ledger (set through its admin API) cannot apply to this filter's requests; add a pricing section" +
			" (with a \"default\" entry) to enforce them"}
	}
	if _, ok := c.Pricing[DefaultPriceEntry]; !ok && !c.spendConfigured() {
		// spendWarnings says the same when the config has its own limits.
		return []string{"pricing: no \"default\" entry, so under storage \"redis\" a request for a model without its own pricing entry" +
			" is refused (400 model_not_priced): the ledger's limits and balances could not be checked for it"}
	}
	return nil
}

// dimensionBudgets reports whether any of the six divided token dimensions
// (global, per_client, per_api_key, per_user, per_team, each per_model
// entry, and tier day budgets) configures a nonzero budget per period.
func (c *Config) dimensionBudgets() (minute, day bool) {
	l := &c.RateLimiting.Limits
	see := func(s *RateLimitSettings) {
		if s == nil {
			return
		}
		minute = minute || intVal(s.TokensPerMinute) > 0
		day = day || intVal(s.TokensPerDay) > 0
	}
	for _, s := range []*RateLimitSettings{l.Global, l.PerClient, l.PerAPIKey, l.PerUser, l.PerTeam} {
		see(s)
	}
	for _, s := range l.PerModel {
		see(&s)
	}
	for _, t := range c.RateLimiting.TierOverrides {
		if t.PerAPIKey != nil {
			day = day || intVal(t.PerAPIKey.TokensPerDay) > 0
		}
	}
	return minute, day
}

// onlyKeyTokenBudget reports whether the per-key dimension (its defaults,
// tiers or keys' own minute budgets) is the only one with a token budget.
func (c *Config) onlyKeyTokenBudget() bool {
	tokens := func(s *RateLimitSettings) bool {
		return s != nil && (intVal(s.TokensPerMinute) > 0 || intVal(s.TokensPerDay) > 0)
	}
	l := &c.RateLimiting.Limits
	for _, s := range []*RateLimitSettings{l.Global, l.PerClient, l.PerUser, l.PerTeam} {
		if tokens(s) {
			return false
		}
	}
	for _, s := range l.PerModel {
		if tokens(&s) {
			return false
		}
	}
	if tokens(l.PerAPIKey) {
		return true
	}
	for _, t := range c.RateLimiting.TierOverrides {
		if tokens(t.PerAPIKey) {
			return true
		}
	}
	for _, k := range c.APIKeys {
		if intVal(k.RateLimitTokensPerMinute) > 0 {
			return true
		}
	}
	return false
}

// configured reports whether a dimension sets any nonzero limit.
func configured(s *RateLimitSettings) bool {
	if s == nil {
		return false
	}
	return floatVal(s.RequestsPerSecond) > 0 || intVal(s.RequestsPerMinute) > 0 || intVal(s.RequestsPerDay) > 0 ||
		intVal(s.TokensPerMinute) > 0 || intVal(s.TokensPerDay) > 0 || intVal(s.ConcurrentRequests) > 0
}
