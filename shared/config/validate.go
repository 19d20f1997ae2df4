package config

import (
	"errors"
	"sort"

	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/ipaddr"
)

// Validate reports every value that cannot work, each with its JSON path,
// joined into one error (nil when the config is usable). It reads a parsed
// Config; absent fields count as their defaults.
func (c *Config) Validate() error {
	var v validator
	rl := &c.RateLimiting
	switch rl.Storage {
	case "", StorageMemory, StorageRedis:
	default:
		v.add("rate_limiting.storage", "must be \"memory\" or \"redis\", not \""+rl.Storage+"\"")
	}
	v.limits("rate_limiting.limits", &rl.Limits)
	c.validateModelNames(&v)
	for i, s := range rl.Whitelist {
		if _, err := parseCIDR(s); err != nil {
			v.add("rate_limiting.whitelist["+formatInt(int64(i))+"]", "\""+s+"\" is not a CIDR or an address")
		}
	}
	for i, k := range rl.BypassKeys {
		if _, err := identity.Normalize(k); err != nil {
			v.add("rate_limiting.bypass_keys["+formatInt(int64(i))+"]", err.Error())
		}
	}
	if rl.BudgetDivision != nil {
		if rl.BudgetDivision.Replicas == nil {
			v.add("rate_limiting.budget_division.replicas", "is required (the number of replicas sharing each token budget)")
		} else if *rl.BudgetDivision.Replicas < 1 {
			v.add("rate_limiting.budget_division.replicas", "must be at least 1")
		}
	}
	for _, tier := range sortedMapKeys(rl.TierOverrides) {
		p := mapPath("rate_limiting.tier_overrides", tier)
		if tier == "" {
			v.add(p, "tier name must not be empty")
		}
		v.settings(joinPath(p, "per_api_key"), rl.TierOverrides[tier].PerAPIKey)
	}
	if rl.MaxBuckets != nil && *rl.MaxBuckets <= 0 {
		v.add("rate_limiting.max_buckets", "must be greater than 0")
	}
	if rl.OnFullBucketMap != "" {
		v.oneOf("rate_limiting.on_full_bucket_map", rl.OnFullBucketMap, OnFullBucketMapFailOpen, OnFullBucketMapRefuse)
	}
	if rl.Storage == StorageRedis && (rl.Redis == nil || rl.Redis.Cluster == "") {
		v.add("rate_limiting.redis.cluster", "is required when storage is \"redis\"")
	}
	if rl.Redis != nil && rl.Redis.FleetSpend != nil && *rl.Redis.FleetSpend {
		// Without a price list every request would be refused as not
		// priced; without the fleet store nothing could check the limits.
		if rl.Storage != StorageRedis {
			v.add("rate_limiting.redis.fleet_spend", "needs storage \"redis\"")
		}
		if len(c.Pricing) == 0 {
			v.add("rate_limiting.redis.fleet_spend", "needs a pricing section to estimate each request's cost")
		}
	}
	if r := rl.Redis; r != nil && r.TokenEnv != "" {
		switch {
		case r.Token != "":
			v.add("rate_limiting.redis.token_env", "set token or token_env, not both (token_env keeps the secret out of the config)")
		case !envName(r.TokenEnv):
			v.add("rate_limiting.redis.token_env", "must be an environment variable name (letters, digits and _, not starting with a digit), not \""+r.TokenEnv+"\"")
		}
	}
	if rl.Redis != nil && rl.Redis.TimeoutMS != nil && *rl.Redis.TimeoutMS <= 0 {
		// Envoy reads a zero callout timeout as "no timeout": a store that
		// hangs would hang admission, so 0 is rejected with the negatives.
		v.add("rate_limiting.redis.timeout_ms", "must be greater than 0")
	}

	v.oneOf("rate_limiting.mode", rl.Mode, ModeEnforce, ModeShadow)
	for _, tier := range sortedMapKeys(rl.TierOverrides) {
		if t := rl.TierOverrides[tier].PerAPIKey; t != nil && t.Mode != "" {
			v.add(joinPath(mapPath("rate_limiting.tier_overrides", tier), "per_api_key.mode"),
				"is set per dimension (rate_limiting.limits.per_api_key.mode), not per tier")
		}
	}
	v.oneOf("token_budget.on_cut_stream", c.TokenBudget.OnCutStream, CutStreamChargeSeen, CutStreamRelease)
	v.oneOf("token_budget.on_unreadable_body", c.TokenBudget.OnUnreadableBody, UnreadableBodyRefuse, UnreadableBodyAdmit)
	v.oneOf("token_budget.on_uncovered_overage", c.TokenBudget.OnUncoveredOverage, OverageDebt, OverageSkip)
	v.oneOf("identity.missing_api_key", c.Identity.MissingAPIKey, MissingKeySkip, MissingKeyRefuse)
	v.oneOf("identity.unknown_api_keys", c.Identity.UnknownAPIKeys, UnknownKeyOwnBudget, UnknownKeyRefuse)

	c.validateKeys(&v)
	c.validateSpend(&v)

	if d := c.DeploymentTokenBudget; d != nil {
		v.nonNegative("deployment_token_budget.share_tokens_per_minute", d.ShareTokensPerMinute)
		v.nonNegative("deployment_token_budget.share_tokens_per_day", d.ShareTokensPerDay)
	}

	for i, h := range c.Identity.APIKeyHeaders {
		v.header("identity.api_key_headers["+formatInt(int64(i))+"]", h, false)
	}
	v.header("identity.trusted_user_header", c.Identity.TrustedUserHeader, true)
	v.header("identity.trusted_team_header", c.Identity.TrustedTeamHeader, true)
	v.header("identity.model_header", c.Identity.ModelHeader, true)
	v.propertyPath("identity.trusted_user_metadata", c.Identity.TrustedUserMetadata)
	v.propertyPath("identity.trusted_team_metadata", c.Identity.TrustedTeamMetadata)

	defaultOut := intOr(c.TokenBudget.DefaultOutputTokens, DefaultOutputTokens)
	for _, name := range sortedMapKeys(c.Models) {
		c.validateModel(&v, name, defaultOut)
	}

	tb := &c.TokenBudget
	if tb.MaxBodyBytes != nil && *tb.MaxBodyBytes <= 0 {
		v.add("token_budget.max_body_bytes", "must be greater than 0")
	}
	if tb.DefaultOutputTokens != nil && *tb.DefaultOutputTokens <= 0 {
		v.add("token_budget.default_output_tokens", "must be greater than 0")
	}
	v.header("token_budget.cache_hit_header", tb.CacheHitHeader, true)
	return errors.Join(v.problems...)
}

func (c *Config) validateKeys(v *validator) {
	byHash := make(map[string]int, len(c.APIKeys))
	byID := make(map[string]int, len(c.APIKeys))
	for i, k := range c.APIKeys {
		p := "api_keys[" + formatInt(int64(i)) + "]"
		h, err := identity.Normalize(k.Key)
		if err != nil {
			v.add(p+".key", err.Error())
		} else if j, dup := byHash[h]; dup {
			v.add(p+".key", "duplicates api_keys["+formatInt(int64(j))+"].key")
		} else {
			byHash[h] = i
		}
		if k.ID != "" {
			if j, dup := byID[k.ID]; dup {
				v.add(p+".id", "duplicates api_keys["+formatInt(int64(j))+"].id")
			} else {
				byID[k.ID] = i
			}
		}
		v.nonNegativeFloat(p+".rate_limit", k.RateLimit)
		v.nonNegative(p+".rate_limit_burst", k.RateLimitBurst)
		v.nonNegative(p+".rate_limit_tokens_per_minute", k.RateLimitTokensPerMinute)
	}
}

func (c *Config) validateModel(v *validator, name string, defaultOut int64) {
	p := mapPath("models", name)
	if name == "" {
		v.add(p, "model name must not be empty")
	}
	m := c.Models[name]
	v.nonNegative(p+".max_tokens_per_request", m.MaxTokensPerRequest)
	v.nonNegative(p+".max_context_length", m.MaxContextLength)
	v.nonNegative(p+".concurrent_requests", m.ConcurrentRequests)
	v.nonNegative(p+".max_images_per_request", m.MaxImagesPerRequest)
	switch m.OnMaxTokens {
	case "", "refuse", "clamp":
	default:
		v.add(p+".on_max_tokens", "must be \"refuse\" or \"clamp\", not \""+m.OnMaxTokens+"\"")
	}
	maxTok, ctx := intVal(m.MaxTokensPerRequest), intVal(m.MaxContextLength)
	if maxTok > 0 && maxTok < defaultOut && m.OnMaxTokens != "clamp" {
		// A request that states no output ceiling asks for the default; with
		// "refuse" every such request would be refused.
		v.add(p+".max_tokens_per_request", "is below token_budget.default_output_tokens ("+formatInt(defaultOut)+"), so every request without max_tokens would be refused; raise it or set on_max_tokens to \"clamp\"")
	}
	if maxTok > 0 && ctx > 0 && ctx < maxTok {
		v.add(p+".max_context_length", "is below max_tokens_per_request, so no request could use its full output ceiling")
	}
	if pm, ok := c.RateLimiting.Limits.PerModel[name]; ok {
		a, b := intVal(pm.ConcurrentRequests), intVal(m.ConcurrentRequests)
		if a > 0 && b > 0 && a != b {
			v.add(p+".concurrent_requests", "conflicts with rate_limiting.limits.per_model entry ("+formatInt(a)+"); set it in one place")
		}
	}
}

type validator struct {
	problems []error
}

func (v *validator) add(path, msg string) { v.problems = append(v.problems, problemAt(path, msg)) }

// oneOf checks an enumerated string; empty is the default and passes.
func (v *validator) oneOf(path, value string, allowed ...string) {
	if value == "" {
		return
	}
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	msg := "must be "
	for i, a := range allowed {
		if i > 0 {
			msg += " or "
		}
		msg += "\"" + a + "\""
	}
	v.add(path, msg+", not \""+value+"\"")
}

func (v *validator) nonNegative(path string, p *Int) {
	if p != nil && *p < 0 {
		v.add(path, "must not be negative")
	}
}

func (v *validator) nonNegativeFloat(path string, p *Float) {
	if p != nil && *p < 0 {
		v.add(path, "must not be negative")
	}
}

func (v *validator) settings(path string, s *RateLimitSettings) {
	if s == nil {
		return
	}
	v.oneOf(joinPath(path, "mode"), s.Mode, ModeEnforce, ModeShadow)
	v.nonNegativeFloat(path+".requests_per_second", s.RequestsPerSecond)
	v.nonNegative(path+".burst_capacity", s.BurstCapacity)
	v.nonNegative(path+".requests_per_minute", s.RequestsPerMinute)
	v.nonNegative(path+".requests_per_day", s.RequestsPerDay)
	v.nonNegative(path+".tokens_per_minute", s.TokensPerMinute)
	v.nonNegative(path+".tokens_per_day", s.TokensPerDay)
	v.nonNegative(path+".concurrent_requests", s.ConcurrentRequests)
}

func (v *validator) limits(path string, l *Limits) {
	v.settings(path+".global", l.Global)
	v.settings(path+".per_client", l.PerClient)
	v.settings(path+".per_api_key", l.PerAPIKey)
	v.settings(path+".per_user", l.PerUser)
	v.settings(path+".per_team", l.PerTeam)
	v.settings(path+".per_backend", l.PerBackend)
	for _, name := range sortedMapKeys(l.PerModel) {
		p := mapPath(path+".per_model", name)
		if name == "" {
			v.add(p, "model name must not be empty")
		}
		s := l.PerModel[name]
		v.settings(p, &s)
	}
}

// header checks an HTTP header name (an RFC 9110 token).
func (v *validator) header(path, name string, optional bool) {
	if name == "" {
		if !optional {
			v.add(path, "header name must not be empty")
		}
		return
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			v.add(path, "\""+name+"\" is not a valid header name")
			return
		}
	}
}

// propertyPath checks a trusted identity property: an Envoy attribute path
// under metadata or filter_state, where only filters in front can write
// (request headers, by contrast, are the client's).
func (v *validator) propertyPath(path string, segs []string) {
	if segs == nil {
		return
	}
	if len(segs) < 2 || (segs[0] != "metadata" && segs[0] != "filter_state") {
		v.add(path, "must be a property path under metadata or filter_state, e.g. [\"metadata\",\"filter_metadata\",\"envoy.filters.http.jwt_authn\",\"sub\"]")
		return
	}
	for i, s := range segs {
		if s == "" {
			v.add(path+"["+formatInt(int64(i))+"]", "must not be empty")
		}
	}
}

func isTokenChar(c byte) bool {
	if (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

// parseCIDR reads a prefix, or a bare address as a one-host prefix, and
// stores IPv4-mapped IPv6 prefixes as IPv4 so they match unmapped clients.
func parseCIDR(s string) (ipaddr.Prefix, error) {
	p, ok := ipaddr.ParsePrefix(s)
	if !ok {
		a, ok := ipaddr.ParseAddr(s)
		if !ok {
			return ipaddr.Prefix{}, errBadCIDR
		}
		p = ipaddr.PrefixFrom(a, 128) // its whole length, the zone dropped
	}
	if a := p.Addr(); a.Unmap() != a && p.Bits() >= 96 {
		p = ipaddr.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p, nil
}

var errBadCIDR = errors.New("not a CIDR")

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// intOr is an optional Int's value, or def when absent.
func intOr(p *Int, def int64) int64 {
	if p == nil {
		return def
	}
	return int64(*p)
}
