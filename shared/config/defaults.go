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
	defaultSettleCutStreams  = false
	defaultFallbackToMemory  = true
	defaultOnMaxTokens       = "refuse"
	defaultStorage           = StorageMemory
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
	if tb.SettleCutStreams == nil {
		tb.SettleCutStreams = newBool(defaultSettleCutStreams)
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
