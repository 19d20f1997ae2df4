package budget

import (
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/config"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/strcmp"
)

// planMemo is what the last plan in a Buffers was built for: the config
// and the identity as the plan reads it. A plan's buckets, keys and limits
// depend on nothing else, and only its token ops' amount on the request,
// so a request of the same caller under the same config replays the plan
// still in the buffers. In the VM building a two-dimension plan costs about
// 12 k instructions and comparing its identity a few hundred; a caller
// sending many requests in a row is the gateway's common case.
//
// The texts are copies kept in text, never views of the identity passed
// in: those may view a buffer the next request overwrites (a header
// listing, a body), and a view would then compare equal to whatever is
// written there next. A compiled config is never changed, so its pointer
// stands for its contents.
type planMemo struct {
	ok    bool
	rt    *config.Runtime
	known bool
	// Views of text: the API key's hash and the config's, the resolved
	// user and team, the client and the model.
	apiKey, keyHash, user, team, client, model string
	text                                       []byte

	requests, tokens []limit.Op
	overage          limit.Overage
	skipped          []string
}

// same reports whether a plan for rt and id (user and team resolved) is
// the memo's plan.
func (m *planMemo) same(rt *config.Runtime, id *Identity, user, team string) bool {
	return m.rt == rt && m.known == id.Key.Known &&
		strcmp.Equal(m.apiKey, id.APIKeyHash) && strcmp.Equal(m.keyHash, id.Key.Hash) &&
		strcmp.Equal(m.user, user) && strcmp.Equal(m.team, team) &&
		strcmp.Equal(m.client, id.Client) && strcmp.Equal(m.model, id.Model)
}

// replay writes the memo's plan, with amount on its token ops, into plan
// and returns its skipped dimensions. The ops are views of the Buffers,
// which hold no other plan (the memo is dropped before they are written).
func (m *planMemo) replay(plan *limit.Plan, amount int64) []string {
	plan.Requests, plan.Tokens, plan.Overage = m.requests, m.tokens, m.overage
	for i := range m.tokens {
		m.tokens[i].Amount = amount
	}
	return m.skipped
}

// keep remembers the plan just built for rt and id.
func (m *planMemo) keep(plan *limit.Plan, rt *config.Runtime, id *Identity, user, team string, skipped []string) {
	t := append(m.text[:0], id.APIKeyHash...)
	t = append(t, id.Key.Hash...)
	t = append(t, user...)
	t = append(t, team...)
	t = append(t, id.Client...)
	t = append(t, id.Model...)
	m.text = t
	at := 0
	next := func(n int) string {
		s := unsafe.String(unsafe.SliceData(t[at:]), n)
		at += n
		return s
	}
	m.apiKey, m.keyHash = next(len(id.APIKeyHash)), next(len(id.Key.Hash))
	m.user, m.team = next(len(user)), next(len(team))
	m.client, m.model = next(len(id.Client)), next(len(id.Model))
	m.rt, m.known = rt, id.Key.Known
	m.requests, m.tokens, m.overage = plan.Requests, plan.Tokens, plan.Overage
	// Capped at its length, so a caller's append never writes into it.
	m.skipped = skipped[:len(skipped):len(skipped)]
	m.ok = true
}
