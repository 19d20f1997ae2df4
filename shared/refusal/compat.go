package refusal

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// Styles selects the client-compatible header sets sent beside the
// filter's own x-ratelimit-* headers (response_headers.openai / .ietf). Each
// describes only the caller's own (api_key) buckets.
type Styles struct {
	// OpenAI adds x-ratelimit-{limit,remaining,reset}-{tokens,requests} as
	// OpenAI sends them, resets as durations ("6m0s"), which clients and SDK
	// helpers already parse: tokens from the minute token budget, requests
	// from the minute request limit (else the day, else the per-second one).
	OpenAI bool
	// IETF adds the RateLimit-Policy and RateLimit fields of the IETF
	// RateLimit header draft: one item per own bucket period, with its quota
	// and window, and its remaining units and seconds to reset.
	IETF bool
}

// policy names and windows of the IETF fields, by family.
var ietfPolicies = [...]struct {
	name   string
	window int64
}{
	familyRequestsSecond: {"requests-second", 1},
	familyRequestsMinute: {"requests-minute", 60},
	familyRequestsDay:    {"requests-day", 86400},
	familyTokensMinute:   {"tokens-minute", 60},
	familyTokensDay:      {"tokens-day", 86400},
}

// AppendCompatHeaders appends the header sets styles asks for, describing
// the caller's own buckets in levels (other dimensions are skipped).
func AppendCompatHeaders(dst []Header, levels []limit.OpLevel, styles Styles, nowUnix int64) []Header {
	if !styles.OpenAI && !styles.IETF {
		return dst
	}
	var own [len(familyNames)]*limit.Level
	for i := range levels {
		l := &levels[i]
		if l.Dimension != privateDimension {
			continue
		}
		if f, ok := familyOf(l.Kind, l.Budget); ok && own[f] == nil {
			own[f] = &l.Level
		}
	}
	if styles.OpenAI {
		if l := own[familyTokensMinute]; l != nil {
			dst = appendOpenAI(dst, "tokens", l, nowUnix)
		}
		for _, f := range []family{familyRequestsMinute, familyRequestsDay, familyRequestsSecond} {
			if l := own[f]; l != nil {
				dst = appendOpenAI(dst, "requests", l, nowUnix)
				break
			}
		}
	}
	if styles.IETF {
		var policy, state []byte
		for f, l := range own {
			if l == nil {
				continue
			}
			p := ietfPolicies[f]
			if len(policy) > 0 {
				policy, state = append(policy, ", "...), append(state, ", "...)
			}
			policy = strconv.AppendQuote(policy, p.name)
			policy = append(policy, ";q="...)
			policy = strconv.AppendInt(policy, max(l.Capacity, 0), 10)
			policy = append(policy, ";w="...)
			policy = strconv.AppendInt(policy, p.window, 10)
			state = strconv.AppendQuote(state, p.name)
			state = append(state, ";r="...)
			state = strconv.AppendInt(state, max(l.Remaining, 0), 10)
			state = append(state, ";t="...)
			state = strconv.AppendInt(state, max(l.ResetUnix-nowUnix, 0), 10)
		}
		if len(policy) > 0 {
			dst = append(dst, Header{"ratelimit-policy", string(policy)}, Header{"ratelimit", string(state)})
		}
	}
	return dst
}

func appendOpenAI(dst []Header, unit string, l *limit.Level, nowUnix int64) []Header {
	return append(dst,
		Header{"x-ratelimit-limit-" + unit, strconv.FormatInt(max(l.Capacity, 0), 10)},
		Header{"x-ratelimit-remaining-" + unit, strconv.FormatInt(max(l.Remaining, 0), 10)},
		Header{"x-ratelimit-reset-" + unit, Duration(max(l.ResetUnix-nowUnix, 0))},
	)
}

// Duration spells whole seconds as OpenAI's reset headers do (Go's
// duration text): "0s", "45s", "6m0s", "1h2m3s".
func Duration(sec int64) string {
	if sec <= 0 {
		return "0s"
	}
	b := make([]byte, 0, 16)
	if h := sec / 3600; h > 0 {
		b = strconv.AppendInt(b, h, 10)
		b = append(b, 'h')
	}
	if sec >= 60 {
		b = strconv.AppendInt(b, sec/60%60, 10)
		b = append(b, 'm')
	}
	b = strconv.AppendInt(b, sec%60, 10)
	return string(append(b, 's'))
}
