package config

import (
	"github.com/tokenbudget/tokenbudget/shared/modelname"
	"math"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// Load is what the filter calls on configure: Check (parse and validate,
// every problem reported), then Compile. Warnings do not stop a load; they
// are returned for the log.
func Load(raw []byte) (*Runtime, []string, error) {
	c, err := Check(raw)
	if err != nil {
		return nil, nil, err
	}
	rt, err := c.Compile()
	if err != nil {
		return nil, nil, err
	}
	return rt, c.Warnings(), nil
}

// Compile builds the Runtime: every division, tier and per-key override is
// resolved here once, so a request does map lookups only. Raw API keys are
// hashed and dropped. Call Validate first; Compile only refuses what it
// cannot represent at all.
func (c *Config) Compile() (*Runtime, error) {
	d := newDivider(c)
	rl := &c.RateLimiting
	l := &rl.Limits
	rt := &Runtime{
		Global:               d.rules(l.Global),
		Client:               d.rules(l.PerClient),
		User:                 d.rules(l.PerUser),
		Team:                 d.rules(l.PerTeam),
		APIKeyDefault:        d.rules(l.PerAPIKey),
		Backend:              requestLimits(l.PerBackend),
		Storage:              rl.Storage,
		MaxBuckets:           int(intOr(rl.MaxBuckets, DefaultMaxBuckets)),
		TrustedUserHeader:    strings.ToLower(c.Identity.TrustedUserHeader),
		TrustedTeamHeader:    strings.ToLower(c.Identity.TrustedTeamHeader),
		ModelHeader:          strings.ToLower(c.Identity.ModelHeader),
		TrustedUserMetadata:  c.Identity.TrustedUserMetadata,
		TrustedTeamMetadata:  c.Identity.TrustedTeamMetadata,
		MaxBodyBytes:         intOr(c.TokenBudget.MaxBodyBytes, DefaultMaxBodyBytes),
		DefaultOutputTokens:  intOr(c.TokenBudget.DefaultOutputTokens, DefaultOutputTokens),
		InjectStreamUsage:    boolOr(c.TokenBudget.InjectStreamUsage, defaultInjectStreamUsage),
		ReleaseCutStreams:    c.TokenBudget.OnCutStream == CutStreamRelease,
		RefundBatching:       boolOr(c.TokenBudget.RefundBatching, false),
		SkipUncoveredOverage: c.TokenBudget.OnUncoveredOverage == OverageSkip,
		AdmitUnreadableBody:  c.TokenBudget.OnUnreadableBody == UnreadableBodyAdmit,
		RefuseMissingKeys:    c.Identity.MissingAPIKey == MissingKeyRefuse,
		RefuseUnknownKeys:    c.Identity.UnknownAPIKeys == UnknownKeyRefuse,
		OpenAIHeaders:        c.ResponseHeaders.OpenAI,
		IETFHeaders:          c.ResponseHeaders.IETF,
		CacheHitHeader:       strings.ToLower(strOr(c.TokenBudget.CacheHitHeader, DefaultCacheHitHeader)),
		CacheHitValue:        strOr(c.TokenBudget.CacheHitValue, DefaultCacheHitValue),
		keys:                 make(map[string]KeyInfo, len(c.APIKeys)),
		keyRules:             make(map[string]*Rules),
		bypass:               make(map[string]struct{}, len(rl.BypassKeys)),
	}
	if rt.Storage == "" {
		rt.Storage = defaultStorage
	}
	if r := rl.Redis; r != nil {
		rt.Redis = RedisSettings{
			Cluster:          r.Cluster,
			Authority:        strOr(r.Authority, r.Cluster),
			Token:            r.Token,
			TokenEnv:         r.TokenEnv,
			TimeoutMS:        intOr(r.TimeoutMS, DefaultRedisTimeoutMS),
			FallbackToMemory: boolOr(r.FallbackToMemory, defaultFallbackToMemory),
			FleetSpend:       rt.Storage == StorageRedis && len(c.Pricing) > 0 && boolOr(r.FleetSpend, true),
		}
	} else {
		rt.Redis = RedisSettings{TimeoutMS: DefaultRedisTimeoutMS, FallbackToMemory: defaultFallbackToMemory}
	}
	headers := c.Identity.APIKeyHeaders
	if headers == nil {
		headers = DefaultAPIKeyHeaders
	}
	rt.StripAPIKeyHeaders = c.Identity.StripAPIKeyHeaders
	rt.APIKeyHeaders = make([]string, len(headers))
	for i, h := range headers {
		rt.APIKeyHeaders[i] = strings.ToLower(h)
	}

	for i, s := range rl.Whitelist {
		p, err := parseCIDR(s)
		if err != nil {
			return nil, errs.Wrap("rate_limiting.whitelist["+formatInt(int64(i))+"]", err)
		}
		rt.whitelist = append(rt.whitelist, p)
	}
	for i, k := range rl.BypassKeys {
		h, err := identity.Normalize(k)
		if err != nil {
			return nil, errs.Wrap("rate_limiting.bypass_keys["+formatInt(int64(i))+"]", err)
		}
		rt.bypass[h] = struct{}{}
	}

	// The fallback rules share everything but the divided budgets: the
	// same keys, exemptions and policies, compiled once more only when the
	// fallback division differs, and read only when the store is down.
	fd, divideFallback := fallbackDivider(c)
	var fb *Runtime
	if divideFallback {
		fb = new(Runtime)
		*fb = *rt
		fb.Global, fb.Client, fb.User, fb.Team = fd.rules(l.Global), fd.rules(l.PerClient), fd.rules(l.PerUser), fd.rules(l.PerTeam)
		fb.APIKeyDefault = fd.rules(l.PerAPIKey)
		fb.keyRules = make(map[string]*Rules)
	}

	for i := range c.APIKeys {
		k := &c.APIKeys[i]
		h, err := identity.Normalize(k.Key)
		if err != nil {
			return nil, errs.Wrap("api_keys["+formatInt(int64(i))+"].key", err)
		}
		info := KeyInfo{Hash: h, ID: k.ID, User: k.User, Team: k.Team, Tier: k.Tier, Known: true}
		rt.keys[h] = info
		var tier *RateLimitSettings
		if t, ok := rl.TierOverrides[k.Tier]; ok && k.Tier != "" {
			tier = t.PerAPIKey
		}
		if r := d.keyRules(l.PerAPIKey, tier, k); r.Version != rt.APIKeyDefault.Version {
			rt.keyRules[h] = &r
		}
		if fb != nil {
			if r := fd.keyRules(l.PerAPIKey, tier, k); r.Version != fb.APIKeyDefault.Version {
				fb.keyRules[h] = &r
			}
		}
	}

	rt.RefuseOnFullBucketMap = rl.OnFullBucketMap == OnFullBucketMapRefuse
	rt.Models = c.compileModels(d)
	rt.models = pointersTo(rt.Models)
	rt.modelNames = modelNames(rt.Models)
	rt.shadow, rt.shadowModels = c.shadowModes()
	rt.spend = c.compileSpend()

	rt.hasTokens, rt.hasRequests = rt.scan()
	if fb != nil {
		fb.Models = c.compileModels(fd)
		fb.models = pointersTo(fb.Models)
		fb.modelNames = rt.modelNames
		fb.hasTokens, fb.hasRequests = fb.scan()
		rt.fallback = fb
	}
	return rt, nil
}

// rules resolves one dimension's settings (nil = nothing configured).
func (d divider) rules(s *RateLimitSettings) Rules {
	var r Rules
	if s != nil {
		r.Tokens = TokenBudget{Minute: d.minute(intVal(s.TokensPerMinute)), Day: d.day(intVal(s.TokensPerDay))}
	} else {
		r.Tokens = TokenBudget{Minute: Allowance{Unlimited: true}, Day: Allowance{Unlimited: true}}
	}
	r.Requests = requestLimits(s)
	r.stamp()
	return r
}

// keyRules applies, field by field, the key's own fields over its tier's
// per_api_key fields (those present) over limits.per_api_key. Minute budgets
// from a key or a tier keep the value the operator wrote; the day budget is
// a dimension-level budget (a tier's tokens_per_day is resolved like
// per_api_key's, divided); a key cannot set a day budget.
func (d divider) keyRules(def, tier *RateLimitSettings, k *APIKey) Rules {
	pick := func(get func(*RateLimitSettings) *Int) *Int {
		if tier != nil {
			if v := get(tier); v != nil {
				return v
			}
		}
		if def != nil {
			return get(def)
		}
		return nil
	}
	rps := (*Float)(nil)
	if tier != nil && tier.RequestsPerSecond != nil {
		rps = tier.RequestsPerSecond
	} else if def != nil {
		rps = def.RequestsPerSecond
	}
	if k.RateLimit != nil {
		rps = k.RateLimit
	}
	burst := pick(func(s *RateLimitSettings) *Int { return s.BurstCapacity })
	if k.RateLimitBurst != nil {
		burst = k.RateLimitBurst
	}
	merged := RateLimitSettings{
		RequestsPerSecond:  rps,
		BurstCapacity:      burst,
		RequestsPerMinute:  pick(func(s *RateLimitSettings) *Int { return s.RequestsPerMinute }),
		RequestsPerDay:     pick(func(s *RateLimitSettings) *Int { return s.RequestsPerDay }),
		TokensPerDay:       pick(func(s *RateLimitSettings) *Int { return s.TokensPerDay }),
		ConcurrentRequests: pick(func(s *RateLimitSettings) *Int { return s.ConcurrentRequests }),
	}
	var r Rules
	switch {
	case k.RateLimitTokensPerMinute != nil:
		r.Tokens.Minute = asWritten(intVal(k.RateLimitTokensPerMinute))
	case tier != nil && tier.TokensPerMinute != nil:
		r.Tokens.Minute = asWritten(intVal(tier.TokensPerMinute))
	case def != nil:
		r.Tokens.Minute = d.minute(intVal(def.TokensPerMinute))
	default:
		r.Tokens.Minute = Allowance{Unlimited: true}
	}
	r.Tokens.Day = d.day(intVal(merged.TokensPerDay))
	r.Requests = requestLimits(&merged)
	r.stamp()
	return r
}

// requestLimits reads the request-count fields (never divided). A burst
// smaller than one second's refill is raised to it, so the configured rate
// is still admitted.
func requestLimits(s *RateLimitSettings) RequestLimits {
	if s == nil {
		return RequestLimits{}
	}
	q := RequestLimits{
		PerSecond:  max(floatVal(s.RequestsPerSecond), 0),
		PerMinute:  max(intVal(s.RequestsPerMinute), 0),
		PerDay:     max(intVal(s.RequestsPerDay), 0),
		Concurrent: max(intVal(s.ConcurrentRequests), 0),
	}
	if q.PerSecond > 0 {
		q.Burst = max(intVal(s.BurstCapacity), ceilRate(q.PerSecond))
	}
	return q
}

func ceilRate(rps float64) int64 {
	c := math.Ceil(rps)
	if c >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(c)
}

// pointersTo is a copy of each of models' rules, by pointer.
func pointersTo(models map[string]ModelRules) map[string]*ModelRules {
	out := make(map[string]*ModelRules, len(models))
	for name, m := range models {
		out[name] = &m
	}
	return out
}

// modelNames is the resolver of the models the config names (limits.per_model
// and models), compiled once: a request's model is resolved to one of them
// as its price is (package modelname).
func modelNames(models map[string]ModelRules) *modelname.Set {
	names := make([]string, 0, len(models))
	for n := range models {
		names = append(names, n)
	}
	return modelname.New(names)
}

// compileModels merges limits.per_model and models by model name.
func (c *Config) compileModels(d divider) map[string]ModelRules {
	out := make(map[string]ModelRules, len(c.Models)+len(c.RateLimiting.Limits.PerModel))
	for name, s := range c.RateLimiting.Limits.PerModel {
		s := s
		out[name] = ModelRules{Rules: d.rules(&s)}
	}
	for name, m := range c.Models {
		mr, ok := out[name]
		if !ok {
			mr = ModelRules{Rules: d.rules(nil)}
		}
		if mr.Requests.Concurrent == 0 {
			mr.Requests.Concurrent = max(intVal(m.ConcurrentRequests), 0)
			mr.stamp()
		}
		mr.MaxTokensPerRequest = max(intVal(m.MaxTokensPerRequest), 0)
		mr.MaxContextLength = max(intVal(m.MaxContextLength), 0)
		mr.MaxImagesPerRequest = max(intVal(m.MaxImagesPerRequest), 0)
		mr.Clamp = m.OnMaxTokens == "clamp"
		out[name] = mr
	}
	return out
}

// shadowModes resolves each dimension's mode: its own, else
// rate_limiting.mode. Only shadowed dimensions are listed (nil when none).
func (c *Config) shadowModes() (dims map[limit.Dimension]bool, models map[string]bool) {
	l := &c.RateLimiting.Limits
	shadow := func(s *RateLimitSettings) bool {
		if s != nil && s.Mode != "" {
			return s.Mode == ModeShadow
		}
		return c.RateLimiting.Mode == ModeShadow
	}
	for _, d := range []struct {
		dim limit.Dimension
		s   *RateLimitSettings
	}{{limit.DimGlobal, l.Global}, {limit.DimClient, l.PerClient}, {limit.DimAPIKey, l.PerAPIKey}, {limit.DimUser, l.PerUser}, {limit.DimTeam, l.PerTeam}} {
		if shadow(d.s) {
			if dims == nil {
				dims = map[limit.Dimension]bool{}
			}
			dims[d.dim] = true
		}
	}
	names := make(map[string]bool, len(l.PerModel)+len(c.Models))
	for n := range l.PerModel {
		names[n] = true
	}
	for n := range c.Models {
		names[n] = true
	}
	for n := range names {
		var s *RateLimitSettings
		if pm, ok := l.PerModel[n]; ok {
			s = &pm
		}
		if shadow(s) {
			if models == nil {
				models = map[string]bool{}
			}
			models[n] = true
		}
	}
	return dims, models
}

// scan finds whether any dimension, tier or key enforces tokens or requests.
func (rt *Runtime) scan() (tokens, requests bool) {
	check := func(r Rules) {
		tokens = tokens || r.Tokens.Any()
		requests = requests || r.Requests.Any()
	}
	for _, r := range []Rules{rt.Global, rt.Client, rt.User, rt.Team, rt.APIKeyDefault} {
		check(r)
	}
	for _, r := range rt.keyRules {
		check(*r)
	}
	for _, m := range rt.Models {
		check(m.Rules)
	}
	requests = requests || rt.Backend.Any()
	return tokens, requests
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func strOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
