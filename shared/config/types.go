package config

// Config is the operator's JSON as written (after defaults). Pointer fields
// keep "absent" apart from an explicit 0 where the difference matters:
// a tier or key override replaces only what it names, and a deployment share
// of 0 is a zero allowance while an absent share is no share at all.
type Config struct {
	RateLimiting          RateLimiting           `json:"rate_limiting"`
	APIKeys               []APIKey               `json:"api_keys,omitempty"`
	DeploymentTokenBudget *DeploymentTokenBudget `json:"deployment_token_budget,omitempty"`
	Identity              Identity               `json:"identity"`
	Models                map[string]ModelLimits `json:"models,omitempty"`
	TokenBudget           TokenBudgetSettings    `json:"token_budget"`
	ResponseHeaders       ResponseHeaders        `json:"response_headers"`
	SpendLimits           *SpendLimits           `json:"spend_limits,omitempty" desc:"USD spend limits of teams and users per UTC day and month (see spend.go)"`
	Pricing               map[string]ModelPrice  `json:"pricing,omitempty" desc:"USD per million tokens by client-facing model; the entry \"default\" prices every other model"`
}

// ResponseHeaders adds client-compatible names for the caller's own
// buckets beside the filter's own x-ratelimit-* headers.
type ResponseHeaders struct {
	OpenAI bool `json:"openai,omitempty" desc:"add OpenAI's x-ratelimit-{limit,remaining,reset}-{tokens,requests} (reset as a duration such as 6m0s)"`
	IETF   bool `json:"ietf,omitempty" desc:"add the IETF RateLimit-Policy and RateLimit fields"`
}

// RateLimiting holds every admission-time limit and how they are stored.
type RateLimiting struct {
	// Storage is "memory" (per-Envoy shared data) or "redis" (fleet-wide via
	// the sharedstore service). Default "memory".
	Storage string `json:"storage,omitempty" desc:"memory (per-Envoy shared data, default) or redis (fleet-wide buckets via the sharedstore service)" enum:"memory,redis"`
	// Mode "shadow" evaluates every limit and counts and logs what it would
	// refuse, but admits the request: how a budget is rolled out.
	Mode   string `json:"mode,omitempty" desc:"enforce (default) or shadow: count and log would-be refusals but admit" enum:"enforce,shadow"`
	Limits Limits `json:"limits"`
	// Whitelist exempts client addresses (CIDRs; a bare address is one host)
	// from every limiter dimension.
	Whitelist []string `json:"whitelist,omitempty" desc:"client CIDRs exempt from every limit (a bare address means one host)"`
	// BypassKeys exempt API keys (raw, or sha256:<64 hex>) from every limit.
	BypassKeys     []string                `json:"bypass_keys,omitempty" desc:"API keys exempt from every limit: raw, or sha256:<64 hex>"`
	BudgetDivision *BudgetDivision         `json:"budget_division,omitempty"`
	TierOverrides  map[string]TierOverride `json:"tier_overrides,omitempty" desc:"per-tier replacement of per_api_key fields, by api_keys[].tier"`
	// MaxBuckets caps each bucket map's buckets kept under their own keys;
	// past it a new bucket takes one of as many reusable slots, dropping a
	// bucket that is whole (back at capacity, no hold open).
	MaxBuckets *Int `json:"max_buckets,omitempty" desc:"entry ceiling of each bucket map (default 100000); past it new buckets take one of as many reusable slots in place of a bucket that is whole"`
	// OnFullBucketMap is what a bucket no slot can take does: fail_open
	// (default, counted under rate_limit_skipped_total) or refuse (503).
	OnFullBucketMap string `json:"on_full_bucket_map,omitempty" desc:"when a bucket map and its reusable slots hold no whole bucket to drop: fail_open (default; the dimension is skipped and counted) or refuse (503)" enum:"fail_open,refuse"`
	Redis           *Redis `json:"redis,omitempty"`
}

// Limits are the admission-time dimensions, each with its own buckets.
type Limits struct {
	Global    *RateLimitSettings           `json:"global,omitempty"`
	PerClient *RateLimitSettings           `json:"per_client,omitempty"`
	PerAPIKey *RateLimitSettings           `json:"per_api_key,omitempty"`
	PerUser   *RateLimitSettings           `json:"per_user,omitempty"`
	PerTeam   *RateLimitSettings           `json:"per_team,omitempty"`
	PerModel  map[string]RateLimitSettings `json:"per_model,omitempty" desc:"limits by client-facing model name"`
	// PerBackend is accepted for compatibility; its token fields have nowhere
	// to attach (selection-time dimension) and only produce a warning.
	PerBackend *RateLimitSettings `json:"per_backend,omitempty" desc:"accepted; token fields here have no effect (warning)"`
}

// RateLimitSettings is one dimension's limits. Every field is optional and
// 0 means unlimited.
type RateLimitSettings struct {
	RequestsPerSecond *Float `json:"requests_per_second,omitempty" desc:"request rate (fractions allowed); 0 = unlimited"`
	BurstCapacity     *Int   `json:"burst_capacity,omitempty" desc:"request bucket size; raised to one second of the rate when smaller"`
	// WindowDuration is accepted because the specification lists it beside
	// the request rate; request buckets refill continuously and token
	// budgets have fixed periods, so it has no effect (a warning says so).
	WindowDuration     *Duration `json:"window_duration,omitempty" desc:"accepted for compatibility: a duration (\"60s\") or a number of seconds; it has no effect (requests refill continuously at requests_per_second, token budgets are per minute and day), and config validate warns"`
	RequestsPerMinute  *Int      `json:"requests_per_minute,omitempty" desc:"0 = unlimited"`
	RequestsPerDay     *Int      `json:"requests_per_day,omitempty" desc:"0 = unlimited"`
	TokensPerMinute    *Int      `json:"tokens_per_minute,omitempty" desc:"minute token budget (capacity one minute of the rate); 0 = unlimited"`
	TokensPerDay       *Int      `json:"tokens_per_day,omitempty" desc:"day token budget (leaky bucket, no midnight reset); 0 = unlimited"`
	ConcurrentRequests *Int      `json:"concurrent_requests,omitempty" desc:"requests in flight; 0 = unlimited"`
	// Mode "shadow" makes this dimension count and log would-be refusals
	// instead of refusing; absent follows rate_limiting.mode.
	Mode string `json:"mode,omitempty" desc:"enforce or shadow for this dimension (default: rate_limiting.mode)" enum:"enforce,shadow"`
}

// BudgetDivision is the hint of how many replicas share each configured
// token budget. An in-memory deployment divides its buckets by it; under
// storage "redis" it divides only the fallback buckets a replica admits on
// while the store is unreachable.
type BudgetDivision struct {
	Replicas *Int `json:"replicas" desc:"token budgets are divided by this count (integer floor); >= 1"`
}

// TierOverride replaces per_api_key fields for keys of one tier.
type TierOverride struct {
	PerAPIKey       *RateLimitSettings `json:"per_api_key,omitempty"`
	CostPerDayUSD   *USD               `json:"cost_per_day_usd,omitempty" desc:"USD spend limit per UTC day of each key of the tier (a key's spend_limit_day_usd wins); 0 blocks"`
	CostPerMonthUSD *USD               `json:"cost_per_month_usd,omitempty" desc:"USD spend limit per UTC month of each key of the tier (a key's spend_limit_month_usd wins); 0 blocks"`
}

// Redis is how the filter reaches the sharedstore service.
type Redis struct {
	Cluster          string `json:"cluster,omitempty" desc:"Envoy cluster of the sharedstore service (required with storage redis)"`
	Authority        string `json:"authority,omitempty" desc:":authority of sharedstore calls (default: the cluster name)"`
	Token            string `json:"token,omitempty" desc:"bearer token for sharedstore (never logged); prefer token_env, which keeps it out of the config"`
	TokenEnv         string `json:"token_env,omitempty" desc:"name of the VM environment variable holding the bearer token for sharedstore (Envoy vm_config.environment_variables, Istio vmConfig.env, the local gateway's --vm-env); instead of token"`
	TimeoutMS        *Int   `json:"timeout_ms,omitempty" desc:"call timeout in ms (default 50, > 0)"`
	FallbackToMemory *bool  `json:"fallback_to_memory,omitempty" desc:"when sharedstore is unreachable: true (default) admit on local buckets, false answer 503"`
	FleetSpend       *bool  `json:"fleet_spend,omitempty" desc:"default true with storage redis and a pricing section: every request (priced by the pricing section) is checked against the spend limits and balances stored in sharedstore's ledger (its admin API), even without a spend limit here; false opts out, so those limits and balances do not apply to this filter's requests"`
}

// APIKey is one known key. Key is the raw key or sha256:<64 hex>; a raw key
// is hashed at load and never kept.
type APIKey struct {
	Key  string `json:"key" desc:"raw key or sha256:<64 hex>"`
	ID   string `json:"id,omitempty"`
	User string `json:"user,omitempty"`
	Team string `json:"team,omitempty"`
	Tier string `json:"tier,omitempty"`
	// RateLimit is the key's own request rate (requests per second);
	// 0 = no request-rate limit for this key.
	RateLimit *Float `json:"rate_limit,omitempty" desc:"the key's own requests per second; 0 = no request-rate limit"`
	// RateLimitBurst replaces the burst of the request rate in effect.
	RateLimitBurst *Int `json:"rate_limit_burst,omitempty" desc:"replaces the burst of the request rate in effect for the key"`
	// RateLimitTokensPerMinute replaces the per_api_key minute budget as
	// written (never divided); 0 disables it for this key.
	RateLimitTokensPerMinute *Int `json:"rate_limit_tokens_per_minute,omitempty" desc:"replaces the per_api_key minute token budget (not divided); 0 disables it"`
	SpendLimitDayUSD         *USD `json:"spend_limit_day_usd,omitempty" desc:"USD the key may spend per UTC day (wins over its tier's cost_per_day_usd); 0 blocks"`
	SpendLimitMonthUSD       *USD `json:"spend_limit_month_usd,omitempty" desc:"USD the key may spend per UTC month (wins over its tier's cost_per_month_usd); 0 blocks"`
}

// DeploymentTokenBudget is this replica's share of the deployment total,
// pushed by a Hub or written by the operator. Each period is independent;
// an absent share is no share, a share of 0 is a zero allowance.
type DeploymentTokenBudget struct {
	ShareTokensPerMinute *Int `json:"share_tokens_per_minute,omitempty" desc:"replaces every nonzero minute budget of the six token dimensions; 0 refuses"`
	ShareTokensPerDay    *Int `json:"share_tokens_per_day,omitempty" desc:"replaces every nonzero day budget of the six token dimensions; 0 refuses"`
}

// Identity says where the caller's identity comes from.
type Identity struct {
	// APIKeyHeaders are tried in order; "authorization" means "Bearer <key>".
	APIKeyHeaders []string `json:"api_key_headers,omitempty" desc:"headers carrying the API key, tried in order; authorization means Bearer <key> (default [authorization, x-api-key])"`
	// TrustedUserHeader and TrustedTeamHeader are the only headers that may
	// set user and team: an auth filter in front must set (and strip) them.
	TrustedUserHeader string `json:"trusted_user_header,omitempty" desc:"header set by an auth filter in front naming the user"`
	TrustedTeamHeader string `json:"trusted_team_header,omitempty" desc:"header set by an auth filter in front naming the team"`
	ModelHeader       string `json:"model_header,omitempty" desc:"header naming the model when the body has none"`
	// TrustedUserMetadata and TrustedTeamMetadata are Envoy property paths
	// (for example ["metadata","filter_metadata","envoy.filters.http.jwt_authn","sub"])
	// that an auth filter in front fills: dynamic metadata a client cannot
	// write. A string value there names the user or team, and wins over a
	// trusted header.
	TrustedUserMetadata []string `json:"trusted_user_metadata,omitempty" desc:"Envoy property path (metadata set by an auth filter in front) naming the user"`
	TrustedTeamMetadata []string `json:"trusted_team_metadata,omitempty" desc:"Envoy property path (metadata set by an auth filter in front) naming the team"`
	// MissingAPIKey is what a request without a key gets: "skip" (default)
	// the per-key dimension, "refuse" a 401.
	MissingAPIKey string `json:"missing_api_key,omitempty" desc:"skip (default): a request without a key skips the per-key budget; refuse: 401" enum:"skip,refuse"`
	// UnknownAPIKeys is what a key not in api_keys gets: "own_budget"
	// (default) a fresh per-key bucket, "refuse" a 401.
	UnknownAPIKeys string `json:"unknown_api_keys,omitempty" desc:"own_budget (default): a key not in api_keys gets its own per-key budget; refuse: only listed keys pass (401)" enum:"own_budget,refuse"`
	// StripAPIKeyHeaders removes the key headers the filter read (those of
	// APIKeyHeaders) from the request once the caller is identified, so a
	// gateway key never reaches the provider; Envoy then injects the
	// provider's own credential.
	StripAPIKeyHeaders bool `json:"strip_api_key_headers,omitempty" desc:"after identifying the caller, remove the api_key_headers from the request, so a gateway key never reaches the provider (default false)"`
}

// ModelLimits are per-request limits of one client-facing model.
type ModelLimits struct {
	MaxTokensPerRequest *Int   `json:"max_tokens_per_request,omitempty" desc:"largest output ceiling a request may ask for; 0 = none"`
	OnMaxTokens         string `json:"on_max_tokens,omitempty" desc:"refuse (default) or clamp a request asking for more" enum:"refuse,clamp"`
	MaxContextLength    *Int   `json:"max_context_length,omitempty" desc:"largest input estimate plus output ceiling; 0 = none"`
	ConcurrentRequests  *Int   `json:"concurrent_requests,omitempty" desc:"requests in flight for the model; 0 = unlimited"`
	MaxImagesPerRequest *Int   `json:"max_images_per_request,omitempty" desc:"most image parts (image_url, input_image, image) one request may carry; 0 = none"`
}

// TokenBudgetSettings tune estimation and reconciliation.
type TokenBudgetSettings struct {
	MaxBodyBytes        *Int  `json:"max_body_bytes,omitempty" desc:"largest request body estimated (default 1048576, > 0)"`
	DefaultOutputTokens *Int  `json:"default_output_tokens,omitempty" desc:"output ceiling reserved when a request states none (default 4096, > 0)"`
	InjectStreamUsage   *bool `json:"inject_stream_usage,omitempty" desc:"ask streaming OpenAI requests for a usage chunk (default true)"`
	// OnCutStream is what a stream that stopped before its normal end is
	// charged: "charge_seen" (default) the usage it reported, else its input
	// estimate plus the output deltas it delivered; "release" nothing.
	OnCutStream string `json:"on_cut_stream,omitempty" desc:"charge_seen (default): a cut stream pays what it delivered; release: it pays nothing" enum:"charge_seen,release"`
	// OnUnreadableBody is what a request body the filter cannot estimate
	// (over max_body_bytes, not JSON) gets: "refuse" (default) a 413 or a
	// 400; "admit" lets it through on a hold of default_output_tokens plus
	// an estimate from its byte count.
	OnUnreadableBody string `json:"on_unreadable_body,omitempty" desc:"refuse (default): a body over max_body_bytes is a 413, one that is not JSON a 400; admit: it passes on a hold of default_output_tokens plus an estimate from its byte count" enum:"refuse,admit"`
	// OnUncoveredOverage is what an overage the bucket cannot cover does:
	// "debt" (default) charges all of it, the level going below zero until
	// refill repays it; "skip" consumes nothing from that bucket.
	OnUncoveredOverage string `json:"on_uncovered_overage,omitempty" desc:"debt (default): an overage is charged whole, the bucket may go below zero; skip: an overage the bucket cannot cover consumes nothing" enum:"debt,skip"`
	// RefundBatching trades how soon other workers see a refund for
	// shared-data traffic (BENCHMARKS.md, "Refunds at settlement").
	RefundBatching *bool  `json:"refund_batching,omitempty" desc:"false (default): a refund (usage under the reservation, a released hold) is written to shared data at settlement, so every worker sees it at once; true: it waits in the worker VM for the bucket's next admission there or the 500 ms tick, halving the shared-data calls per request (about half the lock traffic on Envoy's one shared-data mutex), while other workers see the bucket up to 500 ms without it (stricter, never looser)"`
	CacheHitHeader string `json:"cache_hit_header,omitempty" desc:"response header marking a cache hit (default x-cache)"`
	CacheHitValue  string `json:"cache_hit_value,omitempty" desc:"value of cache_hit_header meaning a hit (default HIT)"`
}
