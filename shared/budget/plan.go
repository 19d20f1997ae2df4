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
// Allocations: one for both op lists, one for all Limits, one for all keys.
func Plan(rt *config.Runtime, id Identity, amount int64) (plan limit.Plan, skipped []string) {
	var b Buffers
	return b.Plan(rt, &id, amount)
}

// Buffers is the storage of one plan, lent again to the next: a plan's op
// lists, Limits and keys are views of it. Whoever reuses it must know that
// nothing holds the last plan any more (its hold ended, no store keeps it).
// The zero Buffers allocates as Plan does.
type Buffers struct {
	limits []limit.Limit
	ops    []limit.Op
	keys   []byte
	// prefixes are the last bucket-key prefix of each dimension and kind,
	// kept once warm: these buffers made a plan before.
	prefixes [6][keyKinds]prefixMemo
	warm     bool
	memo     planMemo
}

// Plan is budget.Plan into b's storage, which grows as needed.
func (b *Buffers) Plan(rt *config.Runtime, id *Identity, amount int64) (plan limit.Plan, skipped []string) {
	skipped = b.PlanInto(&plan, rt, id, amount)
	return plan, skipped
}

// PlanInto writes the plan's ops and overage into *plan, in b's storage,
// and leaves plan.Spend as it is. The identity is read where it lies, the
// plan written where it will stay, and each op and Limit written field by
// field into its slot: in the VM a copy of any of these structs is a
// memory.copy, a call into the host.
//
// Buffers that planned before remember the config and identity of their
// last plan (memo.go): a plan for the same caller under the same config is
// that plan again with the new amount, and only the amount is written.
func (b *Buffers) PlanInto(plan *limit.Plan, rt *config.Runtime, id *Identity, amount int64) (skipped []string) {
	plan.Requests, plan.Tokens, plan.Overage = nil, nil, 0
	if rt == nil {
		return nil
	}
	amount = max(amount, 0)
	user, team := id.User, id.Team
	if user == "" {
		user = id.Key.User
	}
	if team == "" {
		team = id.Key.Team
	}
	m := &b.memo
	if m.ok && m.same(rt, id, user, team) {
		return m.replay(plan, amount)
	}
	m.ok = false // the buffers the memo views are written again
	keep := b.warm
	skipped = b.build(plan, rt, id, user, team, amount)
	if keep {
		m.keep(plan, rt, id, user, team, skipped)
	}
	return skipped
}

// build is PlanInto without the memo, user and team resolved.
func (b *Buffers) build(plan *limit.Plan, rt *config.Runtime, id *Identity, user, team string, amount int64) (skipped []string) {
	// The model's rules by pointer (the config's, unlimited's or
	// anyModel's), never copied; anyModel's are made only when there is no
	// model, since in the VM zeroing a Rules is a memory.fill.
	// The model's bucket is its entry's: every spelling that resolves to
	// one entry (gpt-4o-2024-08-06, openai/gpt-4o) shares its budget.
	modelRules, modelID := &unlimited, id.Model
	if id.Model != "" {
		if e, m := rt.ModelEntry(id.Model); m != nil {
			modelRules, modelID = &m.Rules, e
		}
	} else {
		anyRules := anyModel(rt)
		modelRules = &anyRules
	}
	dims := [6]dimension{
		{dim: limit.DimGlobal, present: true},
		{dim: limit.DimClient, identity: id.Client, present: id.Client != ""},
		{dim: limit.DimAPIKey, identity: id.APIKeyHash, present: id.APIKeyHash != ""},
		{dim: limit.DimUser, identity: user, present: user != ""},
		{dim: limit.DimTeam, identity: team, present: team != ""},
		{dim: limit.DimModel, identity: modelID, present: id.Model != ""},
	}
	rules := [6]*config.Rules{&rt.Global, &rt.Client, rt.APIKeyRules(id.Key), &rt.User, &rt.Team, modelRules}

	var nReq, nTok, nLimits, keyLen int
	for i := range dims {
		d, r := &dims[i], rules[i]
		q, tb := &r.Requests, &r.Tokens
		// tb.Any() and q.Any() spelled out: their value receivers copy the
		// struct, a memory.copy in the VM.
		tokens := !tb.Minute.Unlimited || !tb.Day.Unlimited
		if !d.present {
			if tokens {
				skipped = append(skipped, skipTokens[i])
			}
			if q.PerSecond > 0 || q.PerMinute > 0 || q.PerDay > 0 || q.Concurrent > 0 {
				skipped = append(skipped, skipRequests[i])
			}
			continue
		}
		if n := requestPeriods(q); n > 0 {
			nReq++
			nLimits += n
			keyLen += keyLength(d, requestsVersion(r))
			if tokens {
				keyLen += keyLength(d, requestsVersion(r)) + len(tokensVersion(r)) + 1
			}
		}
		if q.Concurrent > 0 {
			nReq++
			nLimits++
			keyLen += keyLength(d, requestsVersion(r))
		}
		if tokens {
			nTok++
			nLimits += tokenPeriods(tb)
			keyLen += keyLength(d, tokensVersion(r))
		}
	}
	if nReq+nTok == 0 {
		return skipped
	}
	if rt.SkipUncoveredOverage {
		plan.Overage = limit.OverageSkip
	}

	limits := reuse(b.limits, nLimits)[:nLimits]
	// Both op lists share one array; each is capped at its own length, so
	// an append to one can never write into the other.
	ops := reuse(b.ops, nReq+nTok)[:nReq+nTok]
	// Keys are written into one buffer sized for all of them, so the plan's
	// keys share a single allocation, and each key is a view of its bytes
	// as soon as they are written: nothing writes them again. (Were the
	// count ever short, the append would move on to a new array and the
	// keys already taken would keep the old one, still whole.)
	keys := reuse(b.keys, keyLen)
	b.limits, b.ops, b.keys = limits, ops, keys
	// Request ops fill ops from the front, token ops from nReq, and the
	// Limits are laid out in the order the ops are written.
	req, tok, lim := 0, nReq, 0
	for i := range dims {
		d, r := &dims[i], rules[i]
		if !d.present {
			continue
		}
		q, tb := &r.Requests, &r.Tokens
		private := d.dim == limit.DimAPIKey
		tokens := !tb.Minute.Unlimited || !tb.Day.Unlimited
		var record string // the dimension's request counts and tokens in one value
		if requestPeriods(q) > 0 {
			if tokens {
				keys, record = b.appendRecordKey(keys, i, d, requestsVersion(r), tokensVersion(r))
			}
			from := lim
			lim = putRequestLimits(limits, lim, q)
			var key string
			keys, key = b.appendKey(keys, keyRequests, i, d, requestsVersion(r))
			putOp(&ops[req], limit.KindRequests, d.dim, limits[from:lim:lim], 1, private, key, record)
			req++
		}
		if q.Concurrent > 0 {
			from := lim
			putLimit(&limits[lim], limit.PeriodConcurrent, q.Concurrent, 0)
			lim++
			var key string
			keys, key = b.appendKey(keys, keyConcurrency, i, d, requestsVersion(r))
			putOp(&ops[req], limit.KindConcurrency, d.dim, limits[from:lim:lim], 1, private, key, "")
			req++
		}
		if tokens {
			from := lim
			lim = putTokenLimits(limits, lim, tb)
			var key string
			keys, key = b.appendKey(keys, keyTokens, i, d, tokensVersion(r))
			putOp(&ops[tok], limit.KindTokens, d.dim, limits[from:lim:lim], amount, private, key, record)
			tok++
		}
	}
	b.warm = true
	if nReq > 0 {
		plan.Requests = ops[:nReq:nReq]
	}
	if nTok > 0 {
		plan.Tokens = ops[nReq : nReq+nTok : nReq+nTok]
	}
	return skipped
}

// putOp writes every field of an op into its slot.
func putOp(op *limit.Op, kind limit.Kind, dim limit.Dimension, limits []limit.Limit, amount int64, private bool, key, record string) {
	op.Key, op.Kind, op.Dimension, op.Limits, op.Amount, op.Private, op.Record = key, kind, dim, limits, amount, private, record
}

// viewFrom is the text of b from index from on, sharing b's array.
func viewFrom(b []byte, from int) string {
	return unsafe.String(unsafe.SliceData(b[from:]), len(b)-from)
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
