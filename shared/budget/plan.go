// Package budget turns the compiled config and one request's identity into
// the sharedstore.Plan every store admits: which buckets, which periods,
// which keys. It is the only place that knows the dimensions, so the stores
// stay generic and the two backends cannot disagree on what a request owes.
//
// Compiled into the .wasm: no fmt, no os, never panics.
package budget

import (
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/sharedstore"
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

// Dimension names, in admission order.
const (
	DimGlobal = "global"
	DimClient = "client"
	DimAPIKey = "api_key"
	DimUser   = "user"
	DimTeam   = "team"
	DimModel  = "model"
)

// dimension is one row of the plan being built.
type dimension struct {
	name     string
	identity string
	present  bool // the request has an identity on this dimension
	rules    config.Rules
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
// skipped names dimensions that would charge but have no identity:
// "token_budget_<dim>" and "requests_<dim>", for rate_limit_skipped_total.
//
// Allocations: one per op slice, one for all Limits, one for all keys.
func Plan(rt *config.Runtime, id Identity, amount int64) (plan sharedstore.Plan, skipped []string) {
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
	dims := [6]dimension{
		{name: DimGlobal, present: true, rules: rt.Global},
		{name: DimClient, identity: id.Client, present: id.Client != "", rules: rt.Client},
		{name: DimAPIKey, identity: id.APIKeyHash, present: id.APIKeyHash != "", rules: rt.APIKeyRules(id.Key)},
		{name: DimUser, identity: user, present: user != "", rules: rt.User},
		{name: DimTeam, identity: team, present: team != "", rules: rt.Team},
		{name: DimModel, identity: id.Model, present: id.Model != ""},
	}
	if id.Model != "" {
		if m, ok := rt.Models[id.Model]; ok {
			dims[5].rules = m.Rules
		} else {
			dims[5].rules = unlimited
		}
	} else {
		dims[5].rules = anyModel(rt)
	}

	var nReq, nTok, nLimits, keyLen int
	for i := range dims {
		d := &dims[i]
		q, tb := d.rules.Requests, d.rules.Tokens
		if !d.present {
			if tb.Any() {
				skipped = append(skipped, skipTokens[i])
			}
			if q.Any() {
				skipped = append(skipped, skipRequests[i])
			}
			continue
		}
		if n := requestPeriods(q); n > 0 {
			nReq++
			nLimits += n
			keyLen += keyLength(d, requestsVersion(d.rules))
		}
		if q.Concurrent > 0 {
			nReq++
			nLimits++
			keyLen += keyLength(d, requestsVersion(d.rules))
		}
		if tb.Any() {
			nTok++
			nLimits += tokenPeriods(tb)
			keyLen += keyLength(d, tokensVersion(d.rules))
		}
	}
	if nReq+nTok == 0 {
		return plan, skipped
	}

	limits := make([]sharedstore.Limit, 0, nLimits)
	var keys strings.Builder
	keys.Grow(keyLen)
	if nReq > 0 {
		plan.Requests = make([]sharedstore.Op, 0, nReq)
	}
	if nTok > 0 {
		plan.Tokens = make([]sharedstore.Op, 0, nTok)
	}
	// Keys are written into one builder and sliced out once it is complete,
	// so the plan's keys share a single allocation.
	type keyAt struct {
		req          bool
		op, from, to int
	}
	var at [18]keyAt
	nAt := 0
	for i := range dims {
		d := &dims[i]
		if !d.present {
			continue
		}
		q, tb := d.rules.Requests, d.rules.Tokens
		private := d.name == DimAPIKey
		if requestPeriods(q) > 0 {
			from := len(limits)
			limits = appendRequestLimits(limits, q)
			at[nAt] = keyAt{true, len(plan.Requests), keys.Len(), writeKey(&keys, 'r', d, requestsVersion(d.rules))}
			nAt++
			plan.Requests = append(plan.Requests, sharedstore.Op{Kind: sharedstore.KindRequests, Dimension: d.name,
				Limits: limits[from:len(limits):len(limits)], Amount: 1, Private: private})
		}
		if q.Concurrent > 0 {
			from := len(limits)
			limits = append(limits, sharedstore.Limit{Budget: "concurrent", Capacity: q.Concurrent})
			at[nAt] = keyAt{true, len(plan.Requests), keys.Len(), writeKey(&keys, 'c', d, requestsVersion(d.rules))}
			nAt++
			plan.Requests = append(plan.Requests, sharedstore.Op{Kind: sharedstore.KindConcurrency, Dimension: d.name,
				Limits: limits[from:len(limits):len(limits)], Amount: 1, Private: private})
		}
		if tb.Any() {
			from := len(limits)
			limits = appendTokenLimits(limits, tb)
			at[nAt] = keyAt{false, len(plan.Tokens), keys.Len(), writeKey(&keys, 't', d, tokensVersion(d.rules))}
			nAt++
			plan.Tokens = append(plan.Tokens, sharedstore.Op{Kind: sharedstore.KindTokens, Dimension: d.name,
				Limits: limits[from:len(limits):len(limits)], Amount: amount, Private: private})
		}
	}
	all := keys.String()
	for _, k := range at[:nAt] {
		if k.req {
			plan.Requests[k.op].Key = all[k.from:k.to]
		} else {
			plan.Tokens[k.op].Key = all[k.from:k.to]
		}
	}
	return plan, skipped
}
