package config

import "strconv"

// Defaults the operator may leave out.
const (
	DefaultMaxBuckets        = 100000
	DefaultMaxBodyBytes      = 1 << 20
	DefaultOutputTokens      = 4096
	DefaultRedisTimeoutMS    = 50
	DefaultCacheHitHeader    = "x-cache"
	DefaultCacheHitValue     = "HIT"
	defaultInjectStreamUsage = true
	defaultOnCutStream       = CutStreamChargeSeen
	defaultOnOverage         = OverageDebt
	defaultOnUnreadableBody  = UnreadableBodyRefuse
	defaultMissingAPIKey     = MissingKeySkip
	defaultUnknownAPIKeys    = UnknownKeyOwnBudget
	defaultFallbackToMemory  = true
	defaultOnMaxTokens       = "refuse"
	defaultStorage           = StorageMemory
)

// rate_limiting.on_full_bucket_map's values.
const (
	OnFullBucketMapFailOpen = "fail_open"
	OnFullBucketMapRefuse   = "refuse"
)

// DefaultAPIKeyHeaders are tried when identity.api_key_headers is absent.
var DefaultAPIKeyHeaders = []string{"authorization", "x-api-key"}

// applyDefaults fills every absent field that has a default, so Validate
// and Compile see one complete shape. An explicit value (even one Validate
// will reject) is kept.
func (c *Config) applyDefaults() {
	rl := &c.RateLimiting
	if rl.Storage == "" {
		rl.Storage = defaultStorage
	}
	if rl.MaxBuckets == nil {
		rl.MaxBuckets = newInt(DefaultMaxBuckets)
	}
	if rl.Redis != nil {
		if rl.Redis.Authority == "" {
			rl.Redis.Authority = rl.Redis.Cluster
		}
		if rl.Redis.TimeoutMS == nil {
			rl.Redis.TimeoutMS = newInt(DefaultRedisTimeoutMS)
		}
		if rl.Redis.FallbackToMemory == nil {
			rl.Redis.FallbackToMemory = newBool(defaultFallbackToMemory)
		}
	}
	if c.Identity.APIKeyHeaders == nil {
		c.Identity.APIKeyHeaders = append([]string(nil), DefaultAPIKeyHeaders...)
	}
	for name, m := range c.Models {
		if m.OnMaxTokens == "" {
			m.OnMaxTokens = defaultOnMaxTokens
			c.Models[name] = m
		}
	}
	tb := &c.TokenBudget
	if tb.MaxBodyBytes == nil {
		tb.MaxBodyBytes = newInt(DefaultMaxBodyBytes)
	}
	if tb.DefaultOutputTokens == nil {
		tb.DefaultOutputTokens = newInt(DefaultOutputTokens)
	}
	if tb.InjectStreamUsage == nil {
		tb.InjectStreamUsage = newBool(defaultInjectStreamUsage)
	}
	if tb.OnCutStream == "" {
		tb.OnCutStream = defaultOnCutStream
	}
	if tb.OnUnreadableBody == "" {
		tb.OnUnreadableBody = defaultOnUnreadableBody
	}
	if tb.OnUncoveredOverage == "" {
		tb.OnUncoveredOverage = defaultOnOverage
	}
	if c.Identity.MissingAPIKey == "" {
		c.Identity.MissingAPIKey = defaultMissingAPIKey
	}
	if c.Identity.UnknownAPIKeys == "" {
		c.Identity.UnknownAPIKeys = defaultUnknownAPIKeys
	}
	if tb.CacheHitHeader == "" {
		tb.CacheHitHeader = DefaultCacheHitHeader
	}
	if tb.CacheHitValue == "" {
		tb.CacheHitValue = DefaultCacheHitValue
	}
}

func newInt(v int64) *Int      { n := Int(v); return &n }
func newBool(v bool) *bool     { return &v }
func formatInt(v int64) string { return strconv.FormatInt(v, 10) }

// Values of the policy fields (token_budget.on_cut_stream,
// token_budget.on_uncovered_overage, identity.missing_api_key,
// identity.unknown_api_keys). The defaults close the loopholes; the other
// value of each is the original rule (release a cut stream's hold, skip an
// overage the bucket cannot cover, let keyless and unknown keys through),
// kept for operators who want it.
const (
	CutStreamChargeSeen = "charge_seen"
	CutStreamRelease    = "release"
	OverageDebt         = "debt"
	OverageSkip         = "skip"
	MissingKeySkip      = "skip"
	MissingKeyRefuse    = "refuse"
	UnknownKeyOwnBudget = "own_budget"
	UnknownKeyRefuse    = "refuse"
	ModeEnforce         = "enforce"
	ModeShadow          = "shadow"
)

// Values of token_budget.on_unreadable_body: refuse what the filter cannot
// estimate (the default), or admit it on a hold from its byte count.
const (
	UnreadableBodyRefuse = "refuse"
	UnreadableBodyAdmit  = "admit"
)
