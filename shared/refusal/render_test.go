package refusal

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

const now = int64(1_700_000_000)

// ownRequests are the caller's request-count levels a store reports.
var ownRequests = []limit.OpLevel{
	{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodSecond, Level: limit.Level{Capacity: 10, Remaining: 9, ResetUnix: now + 1}},
	{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 100, Remaining: 42, ResetUnix: now + 35}},
	{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodDay, Level: limit.Level{Capacity: 1000, Remaining: 500, ResetUnix: now + 43200}},
	{Kind: limit.KindConcurrency, Dimension: limit.DimAPIKey, Budget: limit.PeriodConcurrent, Level: limit.Level{Capacity: 2, Remaining: 1, ResetUnix: now}},
}

// ownTokens are the caller's token levels (given back after a refusal elsewhere).
var ownTokens = []limit.OpLevel{
	{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 6000, Remaining: 5000, ResetUnix: now + 10}},
	{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodDay, Level: limit.Level{Capacity: 86400, Remaining: 80000, ResetUnix: now + 6400}},
}

func headerMap(t *testing.T, hs []Header) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, h := range hs {
		require.Equal(t, strings.ToLower(h.Name), h.Name)
		_, dup := m[h.Name]
		require.False(t, dup, "header %s twice", h.Name)
		m[h.Name] = h.Value
	}
	return m
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var v struct {
		Error struct {
			Type    string         `json:"type"`
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &v), string(body))
	require.Equal(t, "rate_limit_exceeded", v.Error.Type)
	require.Equal(t, v.Error.Details["limit_type"].(string)+"_exceeded", v.Error.Code)
	require.NotEmpty(t, v.Error.Message)
	return v.Error.Details
}

func TestASharedDimensionRefusalWithholdsEveryLevelOfTheSharedBucket(t *testing.T) {
	r := limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodMinute, RetryAfterSec: 12,
		Level: limit.Level{Capacity: 100000, Remaining: 3, ResetUnix: now + 60}} // a store bug must not leak it
	status, body, headers := Refusal(r, append(append([]limit.OpLevel{}, ownRequests...), ownTokens...), now)
	require.Equal(t, 429, status)
	require.Equal(t, map[string]any{
		"limit_type": "token_budget", "token_dimension": "global", "token_budget": "minute", "retry_after_seconds": 12.0,
	}, decode(t, body))
	require.NotContains(t, string(body), "100000")
	h := headerMap(t, headers)
	require.Equal(t, "12", h["retry-after"])
	for name := range h {
		require.False(t, strings.HasPrefix(name, "x-ratelimit-tokens"), "no token level on a shared refusal: %s", name)
	}
	require.Equal(t, "42", h["x-ratelimit-requests-minute-remaining"], "the caller's own request-count quota still reaches the response")
	require.Equal(t, "9", h["x-ratelimit-remaining"])
	require.Equal(t, "500", h["x-ratelimit-requests-day-remaining"])
}

func TestAPrivateTokenRefusalShowsItsCapacityAndRemaining(t *testing.T) {
	r := limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, RetryAfterSec: 7, Private: true,
		Level: limit.Level{Capacity: 6000, Remaining: 130, ResetUnix: now + 59}}
	_, body, headers := Refusal(r, ownRequests, now)
	require.Equal(t, map[string]any{
		"limit_type": "token_budget", "token_dimension": "api_key", "token_budget": "minute", "retry_after_seconds": 7.0,
		"capacity": 6000.0, "remaining": 130.0,
	}, decode(t, body))
	h := headerMap(t, headers)
	require.Equal(t, "6000", h["x-ratelimit-tokens-limit"])
	require.Equal(t, "130", h["x-ratelimit-tokens-remaining"])
	require.Equal(t, "1700000059", h["x-ratelimit-tokens-reset"])
	require.NotContains(t, h, "x-ratelimit-tokens-day-limit")
}

func TestADayRefusalUsesTheDayHeaderFamily(t *testing.T) {
	r := limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodDay, RetryAfterSec: 3600, Private: true,
		Level: limit.Level{Capacity: 86400, Remaining: 10, ResetUnix: now + 86000}}
	_, body, headers := Refusal(r, nil, now)
	require.Equal(t, "day", decode(t, body)["token_budget"])
	h := headerMap(t, headers)
	require.Equal(t, map[string]string{
		"content-type": "application/json", "retry-after": "3600",
		"x-ratelimit-tokens-day-limit": "86400", "x-ratelimit-tokens-day-remaining": "10", "x-ratelimit-tokens-day-reset": "1700086000",
		"x-should-retry": "false",
	}, h, "an hour's wait is not one to sleep through in a retry loop")
}

func TestRequestRefusalsNameTheirLimitType(t *testing.T) {
	cases := []struct {
		kind      limit.Kind
		budget    limit.Period
		limitType string
		header    string
	}{
		{limit.KindRequests, limit.PeriodSecond, "requests_per_second", "x-ratelimit-remaining"},
		{limit.KindRequests, limit.PeriodMinute, "requests_per_minute", "x-ratelimit-requests-minute-remaining"},
		{limit.KindRequests, limit.PeriodDay, "requests_per_day", "x-ratelimit-requests-day-remaining"},
		{limit.KindConcurrency, limit.PeriodConcurrent, "concurrent_requests", ""},
	}
	for _, c := range cases {
		t.Run(c.limitType, func(t *testing.T) {
			r := limit.Refusal{Kind: c.kind, Dimension: limit.DimAPIKey, Budget: c.budget, RetryAfterSec: 2, Private: true,
				Level: limit.Level{Capacity: 5, Remaining: 0, ResetUnix: now + 2}}
			_, body, headers := Refusal(r, ownRequests, now)
			d := decode(t, body)
			require.Equal(t, c.limitType, d["limit_type"])
			require.Equal(t, "api_key", d["dimension"])
			require.NotContains(t, d, "token_dimension")
			require.Equal(t, 5.0, d["capacity"])
			h := headerMap(t, headers)
			if c.header != "" {
				require.Equal(t, "0", h[c.header], "the refused bucket's own level wins over the reported one")
			}
		})
	}
}

func TestASharedRequestRefusalShowsOnlyTheCallersOwnQuota(t *testing.T) {
	r := limit.Refusal{Kind: limit.KindRequests, Dimension: limit.DimGlobal, Budget: limit.PeriodSecond, RetryAfterSec: 1,
		Level: limit.Level{Capacity: 999, Remaining: 998}}
	leaky := append([]limit.OpLevel{{Kind: limit.KindRequests, Dimension: limit.DimGlobal, Budget: limit.PeriodMinute,
		Level: limit.Level{Capacity: 777, Remaining: 776}}}, ownRequests[1])
	_, body, headers := Refusal(r, leaky, now)
	d := decode(t, body)
	require.NotContains(t, d, "capacity")
	require.NotContains(t, d, "remaining")
	h := headerMap(t, headers)
	require.Equal(t, "100", h["x-ratelimit-requests-minute-limit"], "the caller's own minute bucket, not global's")
	require.NotContains(t, h, "x-ratelimit-limit", "global's second bucket is not the caller's")
}

func TestRetryAfterIsNeverBelowOneSecond(t *testing.T) {
	_, body, headers := Refusal(limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimModel, Budget: limit.PeriodMinute}, nil, now)
	require.Equal(t, 1.0, decode(t, body)["retry_after_seconds"])
	require.Equal(t, "1", headerMap(t, headers)["retry-after"])
}

func TestSuccessHeadersReportTheCallersOwnBuckets(t *testing.T) {
	levels := append(append([]limit.OpLevel{}, ownRequests...), ownTokens...)
	levels = append(levels, limit.OpLevel{Kind: limit.KindTokens, Dimension: limit.DimModel, Budget: limit.PeriodMinute,
		Level: limit.Level{Capacity: 1, Remaining: 1}})
	require.Equal(t, map[string]string{
		"x-ratelimit-limit": "10", "x-ratelimit-remaining": "9", "x-ratelimit-reset": "1700000001",
		"x-ratelimit-requests-minute-limit": "100", "x-ratelimit-requests-minute-remaining": "42", "x-ratelimit-requests-minute-reset": "1700000035",
		"x-ratelimit-requests-day-limit": "1000", "x-ratelimit-requests-day-remaining": "500", "x-ratelimit-requests-day-reset": "1700043200",
		"x-ratelimit-tokens-limit": "6000", "x-ratelimit-tokens-remaining": "5000", "x-ratelimit-tokens-reset": "1700000010",
		"x-ratelimit-tokens-day-limit": "86400", "x-ratelimit-tokens-day-remaining": "80000", "x-ratelimit-tokens-day-reset": "1700006400",
	}, headerMap(t, AppendSuccessHeaders(nil, levels)))
	require.Empty(t, AppendSuccessHeaders(nil, nil))
}

func TestUnavailableFailsClosedWithRetryAfter(t *testing.T) {
	t.Parallel()
	status, body, headers := Unavailable(5)
	require.Equal(t, 503, status)
	require.True(t, json.Valid(body), string(body))
	require.Contains(t, string(body), `"retry_after_seconds":5`)
	require.Equal(t, "5", headerMap(t, headers)["retry-after"])
}

func TestInvalidIsAnOpenAIShapedBadRequest(t *testing.T) {
	status, body, headers := Invalid("context_length_exceeded", "messages", `model "gpt-4o" allows 10 input tokens; this request has ~"20"`)
	require.Equal(t, 400, status)
	var m map[string]map[string]string
	require.NoError(t, json.Unmarshal(body, &m))
	require.Equal(t, "invalid_request_error", m["error"]["type"])
	require.Equal(t, "context_length_exceeded", m["error"]["code"])
	require.Equal(t, "messages", m["error"]["param"])
	require.Contains(t, m["error"]["message"], `~"20"`)
	require.Equal(t, []Header{{"content-type", "application/json"}, {"x-should-retry", "false"}}, headers,
		"waiting cannot cure a 400: the SDKs are told not to retry")
}

func TestARequestLargerThanTheBucketIsToldNotToRetry(t *testing.T) {
	cases := []struct {
		name      string
		refusal   limit.Refusal
		noRetry   bool
		inMessage string
	}{
		{"larger than the bucket", limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute,
			RetryAfterSec: 90, ExceedsCapacity: true, Private: true, Level: limit.Level{Capacity: 20000, Remaining: 20000}},
			true, "larger"},
		{"a shared bucket too small", limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodDay,
			RetryAfterSec: 7, ExceedsCapacity: true}, true, "larger"},
		{"waiting helps", limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute,
			RetryAfterSec: 3, Private: true, Level: limit.Level{Capacity: 20000, Remaining: 100}}, false, "Retry after 3 seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, headers := Refusal(c.refusal, nil, 0)
			require.Equal(t, 429, status)
			var m struct {
				Error struct {
					Message string         `json:"message"`
					Details map[string]any `json:"details"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &m))
			require.Contains(t, m.Error.Message, c.inMessage)
			require.Contains(t, headers, Header{"retry-after", strconv.FormatInt(c.refusal.RetryAfterSec, 10)},
				"Retry-After stays size-aware")
			if c.noRetry {
				require.Equal(t, true, m.Error.Details["exceeds_capacity"])
				require.Contains(t, headers, Header{"x-should-retry", "false"})
			} else {
				require.NotContains(t, m.Error.Details, "exceeds_capacity")
				require.NotContains(t, headers, Header{"x-should-retry", "false"})
			}
		})
	}
}

func TestARefusalWaitingMoreThanAMinuteSaysNotToRetryAndKeepsItsRetryAfter(t *testing.T) {
	cases := []struct {
		name    string
		kind    limit.Kind
		budget  limit.Period
		wait    int64
		noRetry bool
	}{
		{"a minute budget's few seconds", limit.KindTokens, limit.PeriodMinute, 3, false},
		{"exactly a minute", limit.KindTokens, limit.PeriodMinute, MaxRetryWaitSec, false},
		{"a second past a minute", limit.KindTokens, limit.PeriodMinute, MaxRetryWaitSec + 1, true},
		{"a spent day budget", limit.KindTokens, limit.PeriodDay, 53223, true},
		{"a day's request count", limit.KindRequests, limit.PeriodDay, 40000, true},
		{"a request rate", limit.KindRequests, limit.PeriodSecond, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, headers := Refusal(limit.Refusal{Kind: c.kind, Dimension: limit.DimAPIKey, Budget: c.budget,
				RetryAfterSec: c.wait, Private: true, Level: limit.Level{Capacity: 100000, Remaining: 10}}, nil, 0)
			require.Contains(t, headers, Header{"retry-after", strconv.FormatInt(c.wait, 10)}, "Retry-After stays the true wait")
			if c.noRetry {
				require.Contains(t, headers, Header{"x-should-retry", "false"})
			} else {
				require.NotContains(t, headers, Header{"x-should-retry", "false"})
			}
		})
	}
}

func TestUnauthorizedIsAnOpenAIShapedInvalidAPIKey(t *testing.T) {
	status, body, headers := Unauthorized("This gateway requires an API key.")
	require.Equal(t, 401, status)
	var m map[string]map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	require.Equal(t, "invalid_request_error", m["error"]["type"])
	require.Equal(t, "invalid_api_key", m["error"]["code"])
	require.Nil(t, m["error"]["param"])
	require.Equal(t, "This gateway requires an API key.", m["error"]["message"])
	require.Contains(t, headers, Header{"x-should-retry", "false"})
}

func TestAppendSuccessHeadersReusesTheCallersSliceAndMatchesSuccessHeaders(t *testing.T) {
	levels := append(append([]limit.OpLevel{}, ownRequests...), ownTokens...)
	levels = append(levels, limit.OpLevel{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute,
		Level: limit.Level{Capacity: 7, Remaining: -3, ResetUnix: -5}})
	want := AppendSuccessHeaders(nil, levels)
	dst := make([]Header, 1, 32)
	dst[0] = Header{"keep", "me"}
	got := AppendSuccessHeaders(dst, levels)
	require.Equal(t, append([]Header{{"keep", "me"}}, want...), got)
	require.Same(t, &dst[:1][0], &got[0], "the values were appended in place")
	require.Equal(t, dst, AppendSuccessHeaders(dst, nil))

	extreme := []limit.OpLevel{{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute,
		Level: limit.Level{Capacity: math.MinInt64, Remaining: math.MaxInt64, ResetUnix: math.MaxInt64}}}
	require.Equal(t, []Header{{"x-ratelimit-tokens-limit", "-9223372036854775808"},
		{"x-ratelimit-tokens-remaining", "9223372036854775807"}, {"x-ratelimit-tokens-reset", "9223372036854775807"}},
		AppendSuccessHeaders(nil, extreme))
}

// One buffer serves answer after answer: each list says what its own
// levels say, whatever the answers before it wrote (a limit changed by a
// reload, a reset that moved, a remaining count that fell).
func TestAReusedHeaderBufferWritesEachAnswersOwnValues(t *testing.T) {
	tokens := func(capacity, remaining, reset int64) []limit.OpLevel {
		return []limit.OpLevel{
			{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute,
				Level: limit.Level{Capacity: capacity, Remaining: remaining, ResetUnix: reset}},
			{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodMinute,
				Level: limit.Level{Capacity: 1 << 40, Remaining: 1 << 39, ResetUnix: 1800000000}},
			{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodDay,
				Level: limit.Level{Capacity: 10 * capacity, Remaining: 9 * remaining, ResetUnix: reset + 86400}},
		}
	}
	answers := [][]limit.OpLevel{
		tokens(6000, 5000, 1700000010),
		tokens(6000, 4000, 1700000010), // only the remaining counts moved
		tokens(6000, 4000, 1700000011), // the reset moved
		tokens(9000, 8999, 1700000011), // a reload changed the limit
		append(append([]limit.OpLevel{}, ownRequests...), ownTokens...),
		tokens(6000, -1, -1),
		nil,
	}
	var b HeaderBuffer
	for i, levels := range answers {
		b.List = b.List[:0]
		b.AppendSuccess(levels)
		require.Equal(t, AppendSuccessHeaders([]Header{}, levels), b.List, "answer %d", i)
	}
}
