// Package refusal renders what a caller sees when a budget says no (the
// 429 body and headers), when the store is down (503), and the
// x-ratelimit-* headers of a success. It is where the no-leak rule lives: only
// the caller's own (api_key) buckets ever show a level; a shared bucket
// names itself and a Retry-After, nothing more.
//
// Compiled into the .wasm: no fmt, no os, no encoding/json reflection.
package refusal

import (
	"strconv"
	"unsafe"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// Header is one response header; names are lower-case as HTTP/2 wants.
type Header struct{ Name, Value string }

// privateDimension is the only dimension whose levels a caller may learn
// (the planner marks exactly its ops Private). Levels of any other
// dimension are dropped here even if a store passes them by mistake.
const privateDimension = limit.DimAPIKey

// Limit types of error.details.limit_type.
const (
	LimitTokenBudget       = "token_budget"
	LimitRequestsPerSecond = "requests_per_second"
	LimitRequestsPerMinute = "requests_per_minute"
	LimitRequestsPerDay    = "requests_per_day"
	LimitConcurrent        = "concurrent_requests"
	// LimitSpend is a USD spend limit (its refusal is SpendRefusal's 429).
	LimitSpend = "spend_limit"
)

// LimitType names the refused limit as the body and the
// rate_limit_exceeded_total{limit_type} metric do.
func LimitType(kind limit.Kind, budget limit.Period) string {
	switch kind {
	case limit.KindTokens:
		return LimitTokenBudget
	case limit.KindConcurrency:
		return LimitConcurrent
	}
	switch budget {
	case limit.PeriodMinute:
		return LimitRequestsPerMinute
	case limit.PeriodDay:
		return LimitRequestsPerDay
	default:
		return LimitRequestsPerSecond
	}
}

// Refusal renders a 429. The body names the refusing dimension and budget
// (token_budget is always present for a token refusal, whichever periods
// are configured: it costs nothing and a client need not know the config to
// read it) and the size-aware retry_after_seconds; capacity and remaining
// only when the refusing bucket is the caller's own. Headers: retry-after
// always; the refused private bucket's family; and the caller's own
// request-count families from levels, on every refusal (they admitted or
// refused this request independently of the token check). nowUnix floors
// the reset times a store reports.
func Refusal(r limit.Refusal, levels []limit.OpLevel, nowUnix int64) (status int, body []byte, headers []Header) {
	retry := max(r.RetryAfterSec, 1)
	limitType := LimitType(r.Kind, r.Budget)
	private := r.Private && r.Dimension == privateDimension

	body = make([]byte, 0, 384)
	body = append(body, `{"error":{"type":"rate_limit_exceeded","code":`...)
	body = appendJSONString(body, limitType+"_exceeded")
	body = append(body, `,"message":`...)
	body = appendJSONString(body, message(r, limitType, retry))
	body = append(body, `,"details":{"limit_type":`...)
	body = appendJSONString(body, limitType)
	if r.Kind == limit.KindTokens {
		body = append(body, `,"token_dimension":`...)
		body = appendJSONString(body, r.Dimension.String())
		body = append(body, `,"token_budget":`...)
		body = appendJSONString(body, r.Budget.String())
	} else {
		body = append(body, `,"dimension":`...)
		body = appendJSONString(body, r.Dimension.String())
	}
	body = append(body, `,"retry_after_seconds":`...)
	body = strconv.AppendInt(body, retry, 10)
	if r.ExceedsCapacity {
		body = append(body, `,"exceeds_capacity":true`...)
	}
	if private {
		body = append(body, `,"capacity":`...)
		body = strconv.AppendInt(body, r.Level.Capacity, 10)
		body = append(body, `,"remaining":`...)
		body = strconv.AppendInt(body, max(r.Level.Remaining, 0), 10)
	}
	body = append(body, "}}}"...)

	headers = make([]Header, 0, 2+3*(len(levels)+1))
	headers = append(headers, Header{"content-type", "application/json"}, Header{"retry-after", strconv.FormatInt(retry, 10)})
	if r.ExceedsCapacity || retry > MaxRetryWaitSec {
		// The request is larger than the bucket (waiting cannot make it
		// fit), or the wait is longer than a client should sit in a retry
		// loop. Retry-After stays true (it says how much budget the request
		// asks for), and the SDKs that read x-should-retry stop retrying.
		headers = append(headers, noRetry)
	}
	var done families
	if private {
		if f, ok := familyOf(r.Kind, r.Budget); ok {
			headers = f.append(headers, r.Level, nowUnix)
			done = done.with(f)
		}
	}
	for _, l := range levels {
		if l.Kind != limit.KindRequests || l.Dimension != privateDimension {
			continue // a token refusal withholds every token level but the refused own bucket's
		}
		if f, ok := familyOf(l.Kind, l.Budget); ok && !done.has(f) {
			headers = f.append(headers, l.Level, nowUnix)
			done = done.with(f)
		}
	}
	return 429, body, headers
}

// AppendSuccessHeaders appends the x-ratelimit-* headers of an admitted
// request (the caller's own request-count and token buckets after its
// reservation) to dst.
func AppendSuccessHeaders(dst []Header, levels []limit.OpLevel) []Header {
	b := HeaderBuffer{List: dst}
	b.AppendSuccess(levels)
	return b.List
}

// HeaderBuffer is an answer's header list and the bytes its success
// values view, for a caller that reuses them from answer to answer: each
// list is handed to the host (which copies it) before the next is
// written, so the next answer may overwrite both. Every admitted request
// carries these headers, and in the VM a string per value cost fifteen
// allocations.
type HeaderBuffer struct {
	List   []Header
	values []byte
	// memo is the text of each family's last limit and reset: a limit is
	// the config's and a reset moves at most once a second, so most
	// answers would write the same digits again (about a thousand
	// instructions a value in the VM).
	memo [len(familyNames)][2]memoText
}

// memoText is the decimal text of v, owned by the memo.
type memoText struct {
	v    int64
	text string
}

func (m *memoText) of(v int64) string {
	if m.text == "" || m.v != v {
		m.v, m.text = v, string(jsonx.AppendInt(nil, v))
	}
	return m.text
}

// AppendSuccess is AppendSuccessHeaders onto b.List, the remaining counts
// written into b's values.
func (b *HeaderBuffer) AppendSuccess(levels []limit.OpLevel) {
	// Pointers, not copies: in the VM a copy of a struct this size is a
	// memory.copy, a call into the host.
	var picked [len(familyNames)]*limit.Level
	var fams [len(familyNames)]family
	n := 0
	var done families
	for i := range levels {
		l := &levels[i]
		if l.Dimension != privateDimension {
			continue
		}
		if f, ok := familyOf(l.Kind, l.Budget); ok && !done.has(f) {
			picked[n], fams[n] = &l.Level, f
			n++
			done = done.with(f)
		}
	}
	if n == 0 {
		return
	}
	// At most 20 bytes per value ("-9223372036854775808"), so values never
	// grows while the list views it.
	if cap(b.values) < n*20 {
		b.values = make([]byte, 0, len(familyNames)*20)
	}
	v := b.values[:0]
	if b.List == nil {
		b.List = make([]Header, 0, 3*n)
	}
	for i, l := range picked[:n] {
		names, memo := &familyNames[fams[i]], &b.memo[fams[i]]
		start := len(v)
		v = jsonx.AppendInt(v, max(l.Remaining, 0))
		b.List = append(b.List,
			Header{names[0], memo[0].of(l.Capacity)},
			Header{names[1], unsafe.String(&v[start], len(v)-start)},
			Header{names[2], memo[1].of(max(l.ResetUnix, 0))})
	}
	b.values = v
}

// Unavailable renders the fail-closed answer while the store cannot be
// reached (redis.fallback_to_memory false): 503 with a Retry-After.
func Unavailable(retryAfterSec int64) (status int, body []byte, headers []Header) {
	retry := strconv.FormatInt(max(retryAfterSec, 1), 10)
	body = make([]byte, 0, 224)
	body = append(body, `{"error":{"type":"service_unavailable","code":"rate_limit_store_unavailable","message":`...)
	body = appendJSONString(body, "The rate-limit store is unavailable. Retry after "+retry+" seconds.")
	body = append(body, `,"details":{"retry_after_seconds":`...)
	body = append(body, retry...)
	body = append(body, "}}}"...)
	return 503, body, []Header{{"content-type", "application/json"}, {"retry-after", retry}}
}

// MaxRetryWaitSec is the longest Retry-After a refusal lets the SDKs sleep
// through. The official OpenAI and Anthropic SDKs retry a 429 after the whole
// Retry-After unless x-should-retry is "false" (anthropic-sdk-go sleeps any
// length of it, openai-go up to two minutes), so a day budget's wait of hours would hang the
// caller's request for hours; past a minute the refusal says not to retry and
// leaves the wait to the caller, who can read Retry-After.
const MaxRetryWaitSec = 60

// noRetry is the header the OpenAI and Anthropic SDKs read before their own
// retry logic: "false" makes them give up at once. It goes on every refusal
// that waiting cannot cure.
var noRetry = Header{"x-should-retry", "false"}

// message is the human sentence naming the dimension and budget.
func message(r limit.Refusal, limitType string, retry int64) string {
	after := " Retry after " + strconv.FormatInt(retry, 10) + " seconds."
	switch {
	case r.ExceedsCapacity && limitType == LimitTokenBudget:
		return "This request is larger than the whole " + r.Dimension.String() + " " + r.Budget.String() +
			" token budget, so it can never be admitted; reduce max_tokens or the input."
	case r.ExceedsCapacity:
		return "This request is larger than the whole " + r.Dimension.String() + " " + limitType + " limit, so it can never be admitted."
	}
	switch limitType {
	case LimitTokenBudget:
		return "Token budget exceeded: the " + r.Dimension.String() + " " + r.Budget.String() + " token budget cannot cover this request." + after
	case LimitConcurrent:
		return "Too many concurrent requests on the " + r.Dimension.String() + " limit." + after
	default:
		return "Request rate limit exceeded: the " + r.Dimension.String() + " " + limitType + " limit." + after
	}
}

// Invalid renders a 400 for a request that no amount of waiting makes
// admissible under the operator's model limits (an input above
// max_context_length, an output ceiling above max_tokens_per_request). It is
// shaped like OpenAI's invalid_request_error so SDKs surface the message.
func Invalid(code, param, msg string) (status int, body []byte, headers []Header) {
	body = make([]byte, 0, 96+len(msg)+len(param))
	body = append(body, `{"error":{"type":"invalid_request_error","code":`...)
	body = appendJSONString(body, code)
	body = append(body, `,"param":`...)
	body = appendJSONString(body, param)
	body = append(body, `,"message":`...)
	body = appendJSONString(body, msg)
	body = append(body, "}}"...)
	return 400, body, []Header{{"content-type", "application/json"}, noRetry}
}

// BodyTooLarge renders a 413 for a request body over
// token_budget.max_body_bytes under on_unreadable_body "refuse": the filter
// cannot estimate it, and admitting it unread would bypass every token
// limit. Shaped like Invalid; waiting cannot cure it.
func BodyTooLarge(limit int64) (status int, body []byte, headers []Header) {
	n := strconv.FormatInt(limit, 10)
	msg := "The request body is larger than token_budget.max_body_bytes (" + n +
		" bytes), so its tokens cannot be estimated; send a smaller body or ask the operator to raise the limit."
	body = make([]byte, 0, 112+len(msg))
	body = append(body, `{"error":{"type":"invalid_request_error","code":"request_too_large","param":null,"message":`...)
	body = appendJSONString(body, msg)
	body = append(body, `,"details":{"max_body_bytes":`...)
	body = append(body, n...)
	body = append(body, "}}}"...)
	return 413, body, []Header{{"content-type", "application/json"}, noRetry}
}

// NotJSON renders a 400 for a request body that is not one JSON object
// under on_unreadable_body "refuse" (a backend may parse what the filter
// cannot, so admitting it unread would bypass every token limit).
func NotJSON() (status int, body []byte, headers []Header) {
	const msg = "The request body is not valid JSON (one object, nested at most 10000 levels), so its tokens cannot be estimated."
	body = make([]byte, 0, 112+len(msg))
	body = append(body, `{"error":{"type":"invalid_request_error","code":"invalid_json","param":null,"message":`...)
	body = appendJSONString(body, msg)
	body = append(body, "}}"...)
	return 400, body, []Header{{"content-type", "application/json"}, noRetry}
}

// Unauthorized renders a 401 shaped like OpenAI's invalid_api_key answer,
// for a request without a key (identity.missing_api_key "refuse") or with a
// key the config does not list (identity.unknown_api_keys "refuse"). The key
// itself is never echoed.
func Unauthorized(msg string) (status int, body []byte, headers []Header) {
	body = make([]byte, 0, 112+len(msg))
	body = append(body, `{"error":{"type":"invalid_request_error","code":"invalid_api_key","param":null,"message":`...)
	body = appendJSONString(body, msg)
	body = append(body, "}}"...)
	return 401, body, []Header{{"content-type", "application/json"}, noRetry}
}
