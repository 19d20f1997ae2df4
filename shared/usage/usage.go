package usage

import (
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// Usage is the backend's own account of one response, normalized across APIs
// so that settlement never needs to know which API produced it.
//
// Input is every prompt token the backend processed, cached or not:
// OpenAI's prompt_tokens and the Responses API's input_tokens already include
// their cached tokens, while Anthropic's input_tokens excludes them, so for
// Anthropic Input is input_tokens + cache_read_input_tokens +
// cache_creation_input_tokens. CacheRead and CacheWrite are the parts of Input
// that were read from or written to the prompt cache (OpenAI reports reads
// only); they are informational, for pricing, and never added again.
// Output is every generated token, reasoning and tool-call tokens included.
//
// CacheWrite1h is the part of CacheWrite written with Anthropic's one-hour
// lifetime (usage.cache_creation.ephemeral_1h_input_tokens), priced apart
// from five-minute writes; Reasoning is the part of Output the backend
// reports as reasoning (completion_tokens_details / output_tokens_details
// reasoning_tokens). Both are informational parts like the cache counts.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
	CacheWrite1h, Reasoning              int64
}

// Kinds splits the usage by kind. The parts are clamped into the whole, so a
// backend reporting more cached tokens than input tokens cannot make the
// uncached input negative.
func (u Usage) Kinds() tokens.Kinds {
	in := max(u.Input, 0)
	cached := min(max(u.CacheRead, 0), in)
	write := min(max(u.CacheWrite, 0), in-cached)
	write1h := min(max(u.CacheWrite1h, 0), write)
	return tokens.Kinds{
		Input:        in - cached - write,
		CachedInput:  cached,
		CacheWrite:   write - write1h,
		CacheWrite1h: write1h,
		Output:       max(u.Output, 0),
	}
}

// Total is what a settlement charges: the backend's whole consumption, input
// (cached included, because the backend still read those tokens) plus output.
func (u Usage) Total() int64 { return addCount(max(u.Input, 0), u.Output) }

// FromJSON reads the usage block of a non-streamed response body. It reports
// false when the body is not valid JSON or carries no usage block with both a
// readable input and output counter; the caller then ends the hold as for a
// response with no usage block. An error body (status 4xx/5xx)
// normally has no usage block; deciding on the status is the caller's job.
//
// One strict walk checks the body, finds its first "usage" member (the one
// Get would find) and takes the members api's reader needs from inside it as
// it checks them (the first of each name, as Get). A Parse and then a lookup
// read every byte of the answer twice, and a second walk over the usage
// object cost the VM a third of the read.
func FromJSON(api API, body []byte) (Usage, bool) {
	switch api {
	case OpenAIChat, OpenAICompletions, OpenAIResponses:
		keys := chatKeys
		if api == OpenAIResponses {
			keys = responsesKeys
		}
		var vals [4]jsonx.Value
		if !usageMembers(body, keys, vals[:]) {
			return Usage{}, false
		}
		return countsFrom(&vals)
	case AnthropicMessages:
		var vals [5]jsonx.Value
		if !usageMembers(body, anthropicKeys, vals[:]) {
			return Usage{}, false
		}
		var a anthropicUsage
		a.take(&vals)
		return a.usage()
	}
	return Usage{}, false
}

// The members each API's usage reader takes, in the order of the values
// countsFrom and anthropicUsage.take read.
var (
	chatKeys      = []string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}
	responsesKeys = []string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
	anthropicKeys = []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation"}
)

// maxUsageKeys bounds the lists above.
const maxUsageKeys = 5

// usageMembers walks body to its first top-level "usage" member and sets
// vals[i] to that object's first member named keys[i] (the zero Value when
// it has none). It reports whether body is one valid JSON value, an object
// whose first "usage" member is an object; otherwise vals are not to be
// read.
func usageMembers(body []byte, keys []string, vals []jsonx.Value) bool {
	c := jsonx.Strict(body)
	if !c.Enter(jsonx.Object) { // any other value is consumed, and so checked
		return false
	}
	found, object := false, false
	for {
		// One call per member for its name (Next, then Name, cost the VM
		// two); the name is decoded only when it holds an escape.
		key, more := c.NextMember()
		if !more {
			break
		}
		if !found && isUsage(key, c.Escaped()) {
			found = true
			if object = c.EnterObject(); object {
				takeMembers(&c, keys, vals)
			} else {
				c.Skip()
			}
			continue
		}
		c.Skip()
	}
	return object && c.Valid()
}

// takeMembers walks the members of the object c has just entered, to its
// end, and sets vals[i] to the first member named keys[i].
func takeMembers(c *jsonx.StrictCursor, keys []string, vals []jsonx.Value) {
	for {
		key, more := c.NextMember()
		if !more {
			return
		}
		if i := unseenKey(key, c.Escaped(), keys, vals); i >= 0 {
			vals[i] = c.Value()
			continue
		}
		c.Skip()
	}
}

// unseenKey is the index of the key a member's raw name, escaped or not,
// spells, when no member of that name has been taken yet; -1 otherwise.
func unseenKey(raw []byte, escaped bool, keys []string, vals []jsonx.Value) int {
	if escaped {
		raw = jsonx.AppendUnescaped(nil, raw, 0)
	}
	for i, k := range keys {
		if string(raw) == k {
			if vals[i].Exists() {
				return -1
			}
			return i
		}
	}
	return -1
}

// isUsage reports whether a member's raw name, escaped or not, is "usage".
func isUsage(key []byte, escaped bool) bool {
	if escaped {
		return string(jsonx.AppendUnescaped(nil, key, 0)) == "usage"
	}
	return string(key) == "usage"
}

// openAIUsage reads a chat or completions usage object.
func openAIUsage(u jsonx.Value) (Usage, bool) { return countsUsage(u, chatKeys) }

// responsesUsage reads a Responses API usage object.
func responsesUsage(u jsonx.Value) (Usage, bool) { return countsUsage(u, responsesKeys) }

// countsUsage reads an OpenAI-style usage object in one pass over its
// members named by keys (chatKeys, responsesKeys).
func countsUsage(u jsonx.Value, keys []string) (Usage, bool) {
	if u.Kind != jsonx.Object {
		return Usage{}, false
	}
	var vals [4]jsonx.Value
	firstMembers(u, keys, vals[:])
	return countsFrom(&vals)
}

// countsFrom reads an OpenAI-style usage from its members in chatKeys'
// order: the input and output counters, the cached_tokens of the input
// details (part of the input) and the reasoning_tokens of the output details
// (part of the output).
func countsFrom(vals *[4]jsonx.Value) (Usage, bool) {
	in, okIn := readCount(vals[0])
	out, okOut := readCount(vals[1])
	if !okIn || !okOut {
		return Usage{}, false
	}
	cached, _ := readCount(vals[2].Get("cached_tokens"))
	reasoning, _ := readCount(vals[3].Get("reasoning_tokens"))
	return Usage{Input: in, Output: out, CacheRead: min(cached, in), Reasoning: min(reasoning, out)}, true
}

// firstMembers sets vals[i] to obj.Get(keys[i]) for every i in one pass over
// the members, stopping once each key has been seen: as Get, the first
// member of a repeated key wins, readable or not. A usage object read key by
// key was scanned once per key, the costliest part of a settlement in the VM.
func firstMembers(obj jsonx.Value, keys []string, vals []jsonx.Value) {
	missing := len(keys)
	var seen [maxUsageKeys]bool
	obj.Members(func(key string, val jsonx.Value) bool {
		for i, k := range keys {
			if !seen[i] && key == k {
				seen[i], vals[i] = true, val
				missing--
				break
			}
		}
		return missing > 0
	})
}

// anthropicUsage accumulates Anthropic's usage fields, which a stream spreads
// over message_start and message_delta; a later field replaces an earlier one
// because Anthropic reports cumulative counts.
type anthropicUsage struct {
	input, output, cacheRead, cacheWrite, cacheWrite1h int64
	haveInput, haveOutput                              bool
}

func (a *anthropicUsage) merge(u jsonx.Value) {
	if u.Kind != jsonx.Object {
		return
	}
	var vals [5]jsonx.Value
	firstMembers(u, anthropicKeys, vals[:])
	a.take(&vals)
}

// take merges the members of a usage object in anthropicKeys' order.
func (a *anthropicUsage) take(vals *[5]jsonx.Value) {
	if n, ok := readCount(vals[0]); ok {
		a.input, a.haveInput = n, true
	}
	if n, ok := readCount(vals[1]); ok {
		a.output, a.haveOutput = n, true
	}
	if n, ok := readCount(vals[2]); ok {
		a.cacheRead = n
	}
	if n, ok := readCount(vals[3]); ok {
		a.cacheWrite = n
	}
	if n, ok := readCount(vals[4].Get("ephemeral_1h_input_tokens")); ok {
		a.cacheWrite1h = n
	}
}

func (a *anthropicUsage) usage() (Usage, bool) {
	if !a.haveInput || !a.haveOutput {
		return Usage{}, false
	}
	in := addCount(addCount(a.input, a.cacheRead), a.cacheWrite)
	// The one-hour figure only splits cache_creation_input_tokens, the
	// total the input (and so Total) already counts; a breakdown without
	// that total adds nothing.
	return Usage{Input: in, Output: a.output, CacheRead: a.cacheRead, CacheWrite: a.cacheWrite,
		CacheWrite1h: min(a.cacheWrite1h, a.cacheWrite)}, true
}
