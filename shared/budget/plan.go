// Package budget turns the compiled config and one request's identity into
// the limit.Plan every store admits: which buckets, which periods,
// which keys. It is the only place that knows the dimensions, so the stores
// stay generic and the two backends cannot disagree on what a request owes.
//
// Compiled into the .wasm: no fmt, no os, never panics.
package budget

import (
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// Identity is who a request is, per dimension. An empty field means the
// request has no identity on that dimension, which is then skipped (and
// named in the skipped list) rather than charged to a shared "unknown".
type Identity struct {
	// APIKeyHash is the hashed API key; the raw key never reaches a bucket key.
	APIKeyHash string
	// Key is what the config knows about the key (tier, user, team, overrides).
	Key config.KeyInfo
	// User and Team fall back to Key.User and Key.Team when empty.
	User, Team string
	Client     string // peer address
	Model      string // resolved client-facing model name
}

// dimension is one row of the plan being built. Its rules are kept apart
// (Plan's rules array) as pointers into the config or at a copy on Plan's
// stack: read, never copied (six copies of Rules per request were a visible
// cost in the VM), and not beside the strings the plan keeps, which would
// send the stack copies to the heap.
type dimension struct {
	dim      limit.Dimension
	identity string
	present  bool // the request has an identity on this dimension
}

// skip names, prebuilt so a skipped dimension costs no concatenation.
var (
	skipTokens   = [...]string{"token_budget_global", "token_budget_client", "token_budget_api_key", "token_budget_user", "token_budget_team", "token_budget_model"}
	skipRequests = [...]string{"requests_global", "requests_client", "requests_api_key", "requests_user", "requests_team", "requests_model"}
)

// Plan lists every bucket the request must fit: per dimension (global,
// client, api_key, user, team, model) a request-count op (second, minute,
// day: the configured ones), a concurrency op when concurrent is set, and a
// token op for amount with its minute and day periods. Unlimited periods
// are absent; a zero allowance is a period of capacity 0 that refuses.
// The plan carries on_uncovered_overage (debt unless "skip"), which its hold
// records.
// skipped names dimensions that would charge but have no identity:
// "token_budget_<dim>" and "requests_<dim>", for rate_limit_skipped_total.
//
// Allocations: one for both op lists, one for all Limits, one for all keys
// (another for the keys only when the identities are longer than a key
// hash plus a version each).
func Plan(rt *config.Runtime, id Identity, amount int64) (plan limit.Plan, skipped []string) {
	var b Buffers
	return b.Plan(rt, id, amount)
}

// Buffers is the storage of one plan, lent again to the next: a plan's op
// lists, Limits and keys are views of it. Whoever reuses it must know that
// nothing holds the last plan any more (its hold ended, no store keeps it).
// The zero Buffers allocates as Plan does.
type Buffers struct {
	limits []limit.Limit
	ops    []limit.Op
	keys   []byte
}

// Plan is budget.Plan into b's storage, which grows as needed.
func (b *Buffers) Plan(rt *config.Runtime, id Identity, amount int64) (plan limit.Plan, skipped []string) {
	if rt == nil {
		return plan, nil
	}
	amount = max(amount, 0)
	user, team := id.User, id.Team
	if user == "" {
		user = id.Key.User
	}
	if team == "" {
		team = id.Key.Team
	}
	keyRules := rt.APIKeyRules(id.Key)
	var modelRules config.Rules
	if id.Model != "" {
		if m, ok := rt.Models[id.Model]; ok {
			modelRules = m.Rules
		} else {
			modelRules = unlimited
		}
	} else {
		modelRules = anyModel(rt)
	}
	dims := [6]dimension{
		{dim: limit.DimGlobal, present: true},
		{dim: limit.DimClient, identity: id.Client, present: id.Client != ""},
		{dim: limit.DimAPIKey, identity: id.APIKeyHash, present: id.APIKeyHash != ""},
		{dim: limit.DimUser, identity: user, present: user != ""},
		{dim: limit.DimTeam, identity: team, present: team != ""},
		{dim: limit.DimModel, identity: id.Model, present: id.Model != ""},
	}
	rules := [6]*config.Rules{&rt.Global, &rt.Client, &keyRules, &rt.User, &rt.Team, &modelRules}

	// One pass writes every op into storage sized for the most a plan can
	// hold, so nothing is counted first (a second walk of the six
	// dimensions cost the VM a third of the plan): request ops at the front
	// of ops, token ops after maxRequestOps, Limits never past maxLimits, so
	// no slice handed to an op is ever moved. Keys are appended and sliced
	// out once complete.
	const (
		maxRequestOps = 2 * len(dims)                              // a request-count and a concurrency op each
		maxOps        = maxRequestOps + len(dims)                  // and a token op each
		maxLimits     = len(dims) * (3 + 1 + 2)                    // second, minute, day; concurrent; minute, day
		keyRoom       = maxOps * (len("tb|x|api_key||") + 16 + 64) // versions are short hashes, identities mostly key hashes
	)
	limits := reuse(b.limits, maxLimits)
	ops := reuse(b.ops, maxOps)[:maxOps]
	keys := reuse(b.keys, keyRoom)
	keysCap := cap(keys)
	type keyAt struct {
		op, from, to int
	}
	var at [maxOps]keyAt
	nAt, nReq, nTok := 0, 0, 0
	for i := range dims {
		d, r := &dims[i], rules[i]
		q, tb := &r.Requests, &r.Tokens
		if !d.present {
			if tb.Any() {
				skipped = append(skipped, skipTokens[i])
			}
			if q.Any() {
				skipped = append(skipped, skipRequests[i])
			}
			continue
		}
		private := d.dim == limit.DimAPIKey
		if requestPeriods(q) > 0 {
			from, kFrom := len(limits), len(keys)
			limits = appendRequestLimits(limits, q)
			keys = appendKey(keys, 'r', d, requestsVersion(r))
			at[nAt] = keyAt{nReq, kFrom, len(keys)}
			nAt++
			ops[nReq] = limit.Op{Kind: limit.KindRequests, Dimension: d.dim,
				Limits: limits[from:len(limits):len(limits)], Amount: 1, Private: private}
			nReq++
		}
		if q.Concurrent > 0 {
			from, kFrom := len(limits), len(keys)
			limits = append(limits, limit.Limit{Budget: limit.PeriodConcurrent, Capacity: q.Concurrent})
			keys = appendKey(keys, 'c', d, requestsVersion(r))
			at[nAt] = keyAt{nReq, kFrom, len(keys)}
			nAt++
			ops[nReq] = limit.Op{Kind: limit.KindConcurrency, Dimension: d.dim,
				Limits: limits[from:len(limits):len(limits)], Amount: 1, Private: private}
			nReq++
		}
		if tb.Any() {
			from, kFrom := len(limits), len(keys)
			limits = appendTokenLimits(limits, tb)
			keys = appendKey(keys, 't', d, tokensVersion(r))
			at[nAt] = keyAt{maxRequestOps + nTok, kFrom, len(keys)}
			nAt++
			ops[maxRequestOps+nTok] = limit.Op{Kind: limit.KindTokens, Dimension: d.dim,
				Limits: limits[from:len(limits):len(limits)], Amount: amount, Private: private}
			nTok++
		}
	}
	if cap(keys) != keysCap {
		// Identities long enough to outgrow keyRoom moved the keys: the op
		// slots this plan left unused may still view the old array, and
		// must not keep it reachable.
		clear(ops[nReq:maxRequestOps])
		clear(ops[maxRequestOps+nTok:])
	}
	b.limits, b.ops, b.keys = limits, ops, keys
	if nReq+nTok == 0 {
		return plan, skipped
	}
	// keys is complete and never written again: its bytes become the keys.
	all := unsafe.String(unsafe.SliceData(keys), len(keys))
	for _, k := range at[:nAt] {
		ops[k.op].Key = all[k.from:k.to]
	}
	if nReq > 0 {
		plan.Requests = ops[:nReq:nReq]
	}
	if nTok > 0 {
		plan.Tokens = ops[maxRequestOps : maxRequestOps+nTok : maxRequestOps+nTok]
	}
	if rt.SkipUncoveredOverage {
		plan.Overage = limit.OverageSkip
	}
	return plan, skipped
}

// reuse is buf emptied when it can hold n, else a new slice of capacity n.
// What the last plan left past the new one's length is only views of these
// same buffers, so nothing outside them stays reachable through it.
func reuse[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, 0, n)
	}
	return buf[:0]
}
