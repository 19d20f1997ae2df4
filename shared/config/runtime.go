package config

import (
	"github.com/tokenbudget/tokenbudget/shared/ipaddr"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/modelname"
)

// Allowance is one period of a token budget as enforced. Unlimited keeps
// the operator's "0 = unlimited" apart from a budget in force with zero
// capacity (a divided or pushed zero), which refuses every positive
// reservation.
type Allowance struct {
	Unlimited bool
	Capacity  int64
}

// TokenBudget is a dimension's two independent token periods.
type TokenBudget struct {
	Minute, Day Allowance
}

// Any reports whether either period is enforced.
func (t TokenBudget) Any() bool { return !t.Minute.Unlimited || !t.Day.Unlimited }

// RequestLimits are a dimension's request-count limits; 0 = unlimited. Burst
// is already raised to at least one second of PerSecond, and is 0 when
// PerSecond is 0. Request limits are never divided across replicas.
type RequestLimits struct {
	PerSecond                     float64
	Burst                         int64
	PerMinute, PerDay, Concurrent int64
}

// Any reports whether any request-count limit is enforced.
func (q RequestLimits) Any() bool {
	return q.PerSecond > 0 || q.PerMinute > 0 || q.PerDay > 0 || q.Concurrent > 0
}

// Rules are one dimension's resolved limits. The versions are short stable
// hashes of the resolved numbers: a bucket key that carries them changes
// exactly when a parameter of that bucket changes, so a hot reload starts
// fresh buckets for changed budgets and keeps the others.
type Rules struct {
	Tokens   TokenBudget
	Requests RequestLimits
	// Version covers Tokens and Requests together.
	Version string
	// TokensVersion covers only Tokens (for token bucket keys), and
	// RequestsVersion only Requests (for request-count bucket keys).
	TokensVersion, RequestsVersion string
}

// ModelRules are one client-facing model's dimension rules plus its
// per-request limits (models section). Requests.Concurrent merges
// limits.per_model[m].concurrent_requests and models[m].concurrent_requests.
type ModelRules struct {
	Rules
	MaxTokensPerRequest int64 // 0 = none
	Clamp               bool  // true: clamp a larger ask; false: refuse it
	MaxContextLength    int64 // 0 = none
	MaxImagesPerRequest int64 // 0 = none
}

// KeyInfo is what the config knows about an API key (by its hash).
type KeyInfo struct {
	Hash, ID, User, Team, Tier string
	Known                      bool
}

// RedisSettings is how the filter reaches the sharedstore service.
type RedisSettings struct {
	Cluster, Authority, Token string
	TimeoutMS                 int64
	FallbackToMemory          bool
	// FleetSpend sends every request's spend part to sharedstore, so the
	// limits and balances stored in its ledger apply without a local limit.
	FleetSpend bool
	// TokenEnv names the VM environment variable Token is read from
	// (ResolveEnv); "" when the config writes the token itself.
	TokenEnv string
}

// Storage values.
const (
	StorageMemory = "memory"
	StorageRedis  = "redis"
)

// Runtime is the compiled, read-only view used on every request. Lookups are
// map reads; nothing here allocates per request. Raw API keys are not kept.
type Runtime struct {
	Global, Client, User, Team Rules
	// APIKeyDefault is per_api_key for a key without tier or own overrides
	// (and for unknown keys).
	APIKeyDefault Rules
	// Models holds every model named in limits.per_model or models.
	Models map[string]ModelRules
	// models points at a copy of each of Models' rules (Compile).
	models map[string]*ModelRules
	// modelNames resolves a request's model to the name of its entry in
	// models, as pricing resolves it (package modelname).
	modelNames *modelname.Set
	// Backend is per_backend's request limits (its token fields are inert).
	Backend RequestLimits

	Storage    string
	MaxBuckets int
	// RefuseOnFullBucketMap: rate_limiting.on_full_bucket_map "refuse".
	RefuseOnFullBucketMap bool
	Redis                 RedisSettings

	APIKeyHeaders                                     []string // lower-case
	TrustedUserHeader, TrustedTeamHeader, ModelHeader string   // lower-case, "" = none
	// TrustedUserMetadata and TrustedTeamMetadata are property paths, nil = none.
	TrustedUserMetadata, TrustedTeamMetadata []string
	// StripAPIKeyHeaders removes APIKeyHeaders from the request once read.
	StripAPIKeyHeaders bool

	MaxBodyBytes        int64
	DefaultOutputTokens int64
	InjectStreamUsage   bool
	// ReleaseCutStreams is on_cut_stream "release": a cut stream pays
	// nothing. Otherwise it pays what it delivered.
	ReleaseCutStreams bool
	// RefundBatching is token_budget.refund_batching: a refund in shared
	// data waits in the worker VM for the bucket's next admission there or
	// the tick. Otherwise it is written when its hold ends.
	RefundBatching bool
	// SkipUncoveredOverage is on_uncovered_overage "skip": an overage a
	// bucket cannot cover consumes nothing there. Otherwise it is a debt.
	SkipUncoveredOverage bool
	// AdmitUnreadableBody is on_unreadable_body "admit": a body the filter
	// cannot estimate passes on a hold from its byte count. Otherwise it is
	// refused (413 over max_body_bytes, 400 not JSON).
	AdmitUnreadableBody bool
	// RefuseMissingKeys and RefuseUnknownKeys answer 401 to a request
	// without a key and to a key api_keys does not list.
	RefuseMissingKeys, RefuseUnknownKeys bool
	// OpenAIHeaders and IETFHeaders are response_headers.openai / .ietf.
	OpenAIHeaders, IETFHeaders    bool
	CacheHitHeader, CacheHitValue string

	// shadow marks the fixed dimensions in shadow mode; shadowModels the
	// per-model ones, by model name.
	shadow       map[limit.Dimension]bool
	shadowModels map[string]bool

	// fallback is the rule set of the replica-local buckets used while the
	// fleet store is down, nil when it equals this one (see Fallback).
	fallback *Runtime

	keys        map[string]KeyInfo
	keyRules    map[string]*Rules // keys whose rules differ from APIKeyDefault
	whitelist   []ipaddr.Prefix
	bypass      map[string]struct{}
	hasTokens   bool
	hasRequests bool
	spend       spendRuntime
}

// Fallback is the rule set a replica enforces on its own buckets while the
// fleet store is unreachable (storage "redis", fallback_to_memory): the
// token budgets divided as an in-memory deployment divides them
// (budget_division.replicas, a pushed share), while the fleet store keeps
// the deployment total. Nil when no division source changes anything, and
// then the fallback buckets enforce this Runtime's rules. Everything but
// the budgets (keys, exemptions, policies) is the same.
func (r *Runtime) Fallback() *Runtime { return r.fallback }

// Key returns what api_keys says about a key hash; Known is false (and only
// Hash is set) for a key the config does not list.
func (r *Runtime) Key(hash string) KeyInfo {
	// This lookup, and those of ModelOf and Exempt, are skipped when the
	// map is empty: in the VM a lookup is a runtime call that hashes its
	// key even then, and most configs leave these sections empty.
	if len(r.keys) > 0 {
		if k, ok := r.keys[hash]; ok {
			return k
		}
	}
	return KeyInfo{Hash: hash}
}

// APIKeyRules is the per_api_key dimension for one key after its tier's
// overrides and its own fields; the versions reflect those overrides.
// They are a view into the runtime, to be read and never written: the plan
// of every request reads them, and in the VM a copy of them is a
// memory.copy, a call into the host.
func (r *Runtime) APIKeyRules(k KeyInfo) *Rules {
	if k.Known {
		if rules, ok := r.keyRules[k.Hash]; ok {
			return rules
		}
	}
	return &r.APIKeyDefault
}

// Model returns a copy of a model's rules, ok=false when the config names
// no limit for it.
func (r *Runtime) Model(name string) (ModelRules, bool) {
	if m := r.ModelOf(name); m != nil {
		return *m, true
	}
	return ModelRules{}, false
}

// ModelOf is Model by pointer, nil when the config names no limit for the
// model. The rules are the compiled config's, read-only, read where they
// lie: in the VM a copy of ModelRules is a memory.copy, a call into the host.
func (r *Runtime) ModelOf(name string) *ModelRules {
	_, m := r.ModelEntry(name)
	return m
}

// ModelEntry is the entry of limits.per_model and models that governs the
// model a request names, resolved as its price is (package modelname:
// gpt-4o-2024-08-06 and openai/gpt-4o are gpt-4o's), and its rules; "" and
// nil when no entry governs it.
func (r *Runtime) ModelEntry(name string) (string, *ModelRules) {
	if r.models != nil {
		if len(r.models) == 0 {
			return "", nil
		}
		if m := r.models[name]; m != nil {
			return name, m
		}
		if e, ok := r.modelNames.Resolve(name); ok {
			return e, r.models[e]
		}
		return "", nil
	}
	if m, ok := r.Models[name]; ok { // a Runtime not made by Compile
		return name, &m
	}
	return "", nil
}

// UsesClientAddress reports whether the peer's address matters to any rule:
// a per-client limit or a whitelist. When it does not, the filter does not
// ask the host for it (a host call and a parse per request).
func (r *Runtime) UsesClientAddress() bool {
	return r.Client.Tokens.Any() || r.Client.Requests.Any() || len(r.whitelist) > 0
}

// Exempt reports whether a request skips every limiter dimension: its client
// address is whitelisted or its key hash is a bypass key.
func (r *Runtime) Exempt(client ipaddr.Addr, keyHash string) bool {
	if keyHash != "" && len(r.bypass) > 0 {
		if _, ok := r.bypass[keyHash]; ok {
			return true
		}
	}
	if client.IsValid() {
		client = client.Unmap()
		for _, p := range r.whitelist {
			if p.Contains(client) {
				return true
			}
		}
	}
	return false
}

// Shadow reports whether a refusal by dimension (for the model dimension,
// model names the request's model) is only counted and logged, the request
// admitted anyway.
func (r *Runtime) Shadow(dimension limit.Dimension, model string) bool {
	if dimension == limit.DimModel {
		e, _ := r.ModelEntry(model)
		return r.shadowModels[e]
	}
	return r.shadow[dimension]
}

// AnyShadow reports whether some dimension is in shadow mode.
func (r *Runtime) AnyShadow() bool { return len(r.shadow)+len(r.shadowModels) > 0 }

// HasTokenBudget reports whether any dimension, tier or key enforces a token
// period, so the filter can skip body buffering and estimation otherwise.
func (r *Runtime) HasTokenBudget() bool { return r.hasTokens }

// HasRequestLimits reports whether any request-count limit is enforced.
func (r *Runtime) HasRequestLimits() bool { return r.hasRequests }
