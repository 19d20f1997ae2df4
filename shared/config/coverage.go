package config

// coverageWarnings names configs whose limits leave callers out: one that
// limits nothing at all (every request is admitted and only metered), and
// one whose spend limits reach listed keys only while a key not in api_keys
// is admitted with its own budget, and so spends without a USD limit.
func (c *Config) coverageWarnings() []string {
	if !c.limitsAnything() {
		return []string{"rate_limiting: this config limits nothing (no token budget, request rate or concurrency" +
			" limit, and no USD limit), so every request is admitted and only metered; set one, e.g." +
			" rate_limiting.limits.per_api_key.tokens_per_minute"}
	}
	if !c.spendConfigured() || c.Identity.UnknownAPIKeys == UnknownKeyRefuse || c.fleetSpend() {
		return nil
	}
	id := c.Identity
	teamFromRequest := id.TrustedTeamHeader != "" || len(id.TrustedTeamMetadata) > 0
	userFromRequest := id.TrustedUserHeader != "" || len(id.TrustedUserMetadata) > 0
	if sl := c.SpendLimits; sl != nil && (teamFromRequest && len(sl.Teams) > 0 || userFromRequest && len(sl.Users) > 0) {
		return nil // a caller's trusted team or user identity reaches its limit, listed key or not
	}
	return []string{"identity.unknown_api_keys: \"own_budget\" admits a key not in api_keys, and every spend limit here" +
		" applies to listed keys only (their own, their tier's, or a team or user only api_keys name), so an unknown key" +
		" spends without a USD limit; set identity.unknown_api_keys to \"refuse\", or limit spend by a trusted team or" +
		" user identity (identity.trusted_team_header, identity.trusted_user_header)"}
}

// limitsAnything reports whether any setting can refuse a request for its
// rate, its tokens, its concurrency or its spend.
func (c *Config) limitsAnything() bool {
	l := &c.RateLimiting.Limits
	for _, s := range []*RateLimitSettings{l.Global, l.PerClient, l.PerAPIKey, l.PerUser, l.PerTeam} {
		if configured(s) {
			return true
		}
	}
	for _, s := range l.PerModel {
		if configured(&s) {
			return true
		}
	}
	if b := l.PerBackend; b != nil && (floatVal(b.RequestsPerSecond) > 0 || intVal(b.RequestsPerMinute) > 0 ||
		intVal(b.RequestsPerDay) > 0 || intVal(b.ConcurrentRequests) > 0) {
		return true // its token fields have no effect (warned about above), its request limits do
	}
	for _, t := range c.RateLimiting.TierOverrides {
		if configured(t.PerAPIKey) {
			return true
		}
	}
	for _, k := range c.APIKeys {
		if floatVal(k.RateLimit) > 0 || intVal(k.RateLimitTokensPerMinute) > 0 {
			return true
		}
	}
	return c.DeploymentTokenBudget != nil || c.spendConfigured() || c.fleetSpend()
}

// fleetSpend reports whether every request is checked against the limits
// stored in sharedstore's ledger (rate_limiting.redis.fleet_spend under
// storage "redis"), which may cover any caller.
func (c *Config) fleetSpend() bool {
	r := c.RateLimiting.Redis
	// The compiled rule (Compile's RedisSettings.FleetSpend): on by default
	// with a pricing section, off only when opted out.
	return c.RateLimiting.Storage == StorageRedis && r != nil && len(c.Pricing) > 0 && boolOr(r.FleetSpend, true)
}
