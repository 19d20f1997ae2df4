package usage

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

func TestFromJSONReadsEachAPIsUsageBlock(t *testing.T) {
	tests := []struct {
		name string
		api  API
		body string
		want Usage
	}{
		{"chat completion with cached and reasoning tokens", OpenAIChat, `{
  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
  "object": "chat.completion",
  "created": 1741570283,
  "model": "o3-mini-2025-01-31",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done.", "refusal": null, "annotations": []}, "logprobs": null, "finish_reason": "stop"}],
  "usage": {
    "prompt_tokens": 1117,
    "completion_tokens": 46,
    "total_tokens": 1163,
    "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 32, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
  },
  "service_tier": "default",
  "system_fingerprint": "fp_fc9f1d7035"
}`, Usage{Input: 1117, Output: 46, CacheRead: 1024, Reasoning: 32}},
		{"completions", OpenAICompletions, `{"id":"cmpl-uqkvlQyYK7bGYrRHQ0eXlWi7","object":"text_completion","created":1589478378,"model":"gpt-3.5-turbo-instruct","choices":[{"text":"\n\nThis is indeed a test","index":0,"logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}`,
			Usage{Input: 5, Output: 7}},
		{"responses", OpenAIResponses, `{"id":"resp_67ccd3a9da748190baa7f1570fe91ac604becb25c45c1d41","object":"response","created_at":1741476777,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-4o-2024-08-06","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"The image depicts a boardwalk.","annotations":[]}]}],"usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":256},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":380}}`,
			Usage{Input: 328, Output: 52, CacheRead: 256}},
		{"responses compact", OpenAIResponses, `{"id":"resp_c1","object":"response.compaction","created_at":1764967971,"output":[{"id":"msg_1","type":"message","status":"completed","content":[{"type":"input_text","text":"Summarize."}],"role":"user"},{"id":"cmp_1","type":"compaction","encrypted_content":"gAAAAABpM0Yj"}],"usage":{"input_tokens":139,"input_tokens_details":{"cached_tokens":0},"output_tokens":438,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":577}}`,
			Usage{Input: 139, Output: 438, Reasoning: 64}},
		{"anthropic message with cache read and write", AnthropicMessages, `{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi! My name is Claude."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,"cache_creation_input_tokens":2051,"cache_read_input_tokens":10000,"cache_creation":{"ephemeral_5m_input_tokens":2051,"ephemeral_1h_input_tokens":0},"output_tokens":503,"service_tier":"standard"}}`,
			Usage{Input: 2095 + 2051 + 10000, Output: 503, CacheRead: 10000, CacheWrite: 2051}},
		{"anthropic one-hour cache writes are split out of the write total", AnthropicMessages, `{"type":"message","usage":{"input_tokens":10,"cache_creation_input_tokens":300,"cache_read_input_tokens":40,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":200},"output_tokens":5}}`,
			Usage{Input: 10 + 300 + 40, Output: 5, CacheRead: 40, CacheWrite: 300, CacheWrite1h: 200}},
		{"anthropic one-hour figure above the write total is clamped to it", AnthropicMessages, `{"usage":{"input_tokens":1,"cache_creation_input_tokens":3,"cache_creation":{"ephemeral_1h_input_tokens":9},"output_tokens":1}}`,
			Usage{Input: 4, Output: 1, CacheWrite: 3, CacheWrite1h: 3}},
		{"anthropic breakdown without the write total adds nothing", AnthropicMessages, `{"usage":{"input_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":7,"ephemeral_1h_input_tokens":9},"output_tokens":1}}`,
			Usage{Input: 1, Output: 1}},
		{"reasoning beyond output is capped at output", OpenAIResponses, `{"usage":{"input_tokens":1,"output_tokens":2,"output_tokens_details":{"reasoning_tokens":5}}}`,
			Usage{Input: 1, Output: 2, Reasoning: 2}},
		{"anthropic without cache fields", AnthropicMessages, `{"type":"message","usage":{"input_tokens":12,"output_tokens":6}}`,
			Usage{Input: 12, Output: 6}},
		{"numeric strings and integral floats", OpenAIChat, `{"usage":{"prompt_tokens":"32000","completion_tokens":32000.0,"prompt_tokens_details":{"cached_tokens":"1e3"}}}`,
			Usage{Input: 32000, Output: 32000, CacheRead: 1000}},
		{"absurd counts clamp", OpenAIResponses, `{"usage":{"input_tokens":1e300,"output_tokens":"99999999999999999999999"}}`,
			Usage{Input: maxCount, Output: maxCount}},
		{"cached beyond input is capped at input", OpenAIChat, `{"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":50}}}`,
			Usage{Input: 10, Output: 1, CacheRead: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FromJSON(tt.api, []byte(tt.body))
			require.True(t, ok)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.want.Input+tt.want.Output, got.Total())
		})
	}
}

func TestFromJSONReportsNoUsageWithoutAUsableBlock(t *testing.T) {
	tests := []struct {
		name string
		api  API
		body string
	}{
		{"openai error body", OpenAIChat, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`},
		{"anthropic error body", AnthropicMessages, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"usage null", OpenAIChat, `{"usage":null}`},
		{"usage not an object", OpenAIResponses, `{"usage":[1,2]}`},
		{"input missing", OpenAIChat, `{"usage":{"completion_tokens":5}}`},
		{"output missing", AnthropicMessages, `{"usage":{"input_tokens":5}}`},
		{"chat field names on the responses API", OpenAIResponses, `{"usage":{"prompt_tokens":5,"completion_tokens":5}}`},
		{"fractional count", OpenAIChat, `{"usage":{"prompt_tokens":5.5,"completion_tokens":5}}`},
		{"negative count", AnthropicMessages, `{"usage":{"input_tokens":-1,"output_tokens":5}}`},
		{"boolean count", OpenAIChat, `{"usage":{"prompt_tokens":true,"completion_tokens":5}}`},
		{"truncated body", OpenAIChat, `{"usage":{"prompt_tokens":5,"completion_tokens":5}`},
		{"trailing garbage", OpenAIChat, `{"usage":{"prompt_tokens":5,"completion_tokens":5}}}`},
		{"not JSON", OpenAIChat, `data: {"usage":{}}`},
		{"empty", OpenAIChat, ``},
		{"unknown API", 0, `{"usage":{"prompt_tokens":5,"completion_tokens":5}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FromJSON(tt.api, []byte(tt.body))
			require.False(t, ok)
			require.Equal(t, Usage{}, got)
		})
	}
}

func TestReadCountAcceptsOnlyIntegralNonNegativeCounts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		json string
		want int64
		ok   bool
	}{
		{`0`, 0, true},
		{`42`, 42, true},
		{`42.0`, 42, true},
		{`4.2e1`, 42, true},
		{`-0`, 0, true},
		{`"42"`, 42, true},
		{`"42.0"`, 42, true},
		{`1e12`, maxCount, true},
		{`1e13`, maxCount, true},
		{`9223372036854775807`, maxCount, true},
		{`"1e400"`, maxCount, true},
		{`42.5`, 0, false},
		{`-1`, 0, false},
		{`-1.0`, 0, false},
		{`"-1e400"`, 0, false},
		{`""`, 0, false},
		{`" 42"`, 0, false},
		{`"0x2a"`, 0, false},
		{`"NaN"`, 0, false},
		{`"Inf"`, 0, false},
		{`"1_000"`, 0, false},
		{`"abc"`, 0, false},
		{`null`, 0, false},
		{`true`, 0, false},
		{`{}`, 0, false},
		{`[]`, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			got, ok := readCount(jsonx.Parse([]byte(tt.json)))
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestTotalSaturatesInsteadOfOverflowing(t *testing.T) {
	t.Parallel()
	require.Equal(t, int64(1<<63-1), Usage{Input: 1<<63 - 1, Output: 5}.Total())
	require.Equal(t, int64(5), Usage{Input: -3, Output: 5}.Total())
}

func TestKindsSplitTheUsageIntoDisjointPricedParts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		u    Usage
		want tokens.Kinds
	}{
		{"openai cached input is taken out of the prompt", Usage{Input: 1117, Output: 46, CacheRead: 1024, Reasoning: 32},
			tokens.Kinds{Input: 93, CachedInput: 1024, Output: 46}},
		{"anthropic reads and both write lifetimes", Usage{Input: 10 + 300 + 40, Output: 5, CacheRead: 40, CacheWrite: 300, CacheWrite1h: 200},
			tokens.Kinds{Input: 10, CachedInput: 40, CacheWrite: 100, CacheWrite1h: 200, Output: 5}},
		{"no usage", Usage{}, tokens.Kinds{}},
		{"parts larger than the input are clamped into it", Usage{Input: 10, CacheRead: 8, CacheWrite: 8, CacheWrite1h: 9, Output: 1},
			tokens.Kinds{CachedInput: 8, CacheWrite: 0, CacheWrite1h: 2, Output: 1}},
		{"negative figures count as nothing", Usage{Input: -5, Output: -1, CacheRead: -3}, tokens.Kinds{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.u.Kinds()
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.u.Total(), got.Input+got.CachedInput+got.CacheWrite+got.CacheWrite1h+got.Output)
		})
	}
}

// The usage object is read in one pass, yet each counter is the one Get
// would find: the first member of its name (escaped spellings included),
// even when that first one is unreadable.
func TestAUsageCounterIsTheFirstMemberOfItsName(t *testing.T) {
	for _, c := range []struct {
		name  string
		body  string
		want  Usage
		found bool
	}{
		{"plain", `{"usage":{"prompt_tokens":10,"completion_tokens":5}}`, Usage{Input: 10, Output: 5}, true},
		{"repeated, first wins", `{"usage":{"prompt_tokens":10,"prompt_tokens":99,"completion_tokens":5,"completion_tokens":1}}`, Usage{Input: 10, Output: 5}, true},
		{"first unreadable", `{"usage":{"prompt_tokens":"x","prompt_tokens":10,"completion_tokens":5}}`, Usage{}, false},
		{"escaped key", `{"usage":{"prompt\u005ftokens":7,"completion_tokens":5}}`, Usage{Input: 7, Output: 5}, true},
		{"details", `{"usage":{"prompt_tokens_details":{"cached_tokens":4,"cached_tokens":9},"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":8}}}`, Usage{Input: 10, Output: 5, CacheRead: 4}, true},
		{"output missing", `{"usage":{"prompt_tokens":10}}`, Usage{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := FromJSON(OpenAIChat, []byte(c.body))
			require.Equal(t, c.found, ok)
			require.Equal(t, c.want, got)
		})
	}
	a, ok := FromJSON(AnthropicMessages, []byte(`{"usage":{"input_tokens":3,"input_tokens":8,"output_tokens":2,"cache_read_input_tokens":1,"cache_creation_input_tokens":2,"cache_read_input_tokens":50}}`))
	require.True(t, ok)
	require.Equal(t, Usage{Input: 6, Output: 2, CacheRead: 1, CacheWrite: 2}, a)
}

// The one walk FromJSON makes reads what Parse, then Get("usage") and the
// usage readers' own walk over that object read: the same verdict on the
// body and the same usage, whatever the body (not an object, a repeated or
// escaped "usage" or counter, garbage after it) and for every API.
func TestTheUsageWalkReadsWhatParseAndGetRead(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"id":"x","choices":[{"message":{"content":"usage"}}],"usage":{"a":1},"usage":{"b":2}}`,
		`{"us\u0061ge":{"prompt_tokens":1,"completion_tokens":2},"usage":2}`,
		`{"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens":3}}`,
		`{"usage":{"prompt_tok\u0065ns":4,"completion_tokens":2,"prompt_tokens":3}}`,
		`{"usage":{"input_tokens":5,"output_tokens":6,"cache_creation":{"ephemeral_1h_input_tokens":2},"cache_creation_input_tokens":3}}`,
		`{"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}} x`,
		`{"usage":{"prompt_tokens":1,"completion_tokens":2},}`,
		`{"usage":{"prompt_tokens":1,"completion_tokens":2}`,
		`{"usage":{"prompt_tokens":1,"completion_tokens":2,}}`,
		`[{"usage":{"prompt_tokens":1,"completion_tokens":2}}]`,
		`{"usage":[1,2]}`,
		`"usage"`,
		` {"x":[1,2,{"usage":3}]} `,
		``,
	} {
		t.Run(body, func(t *testing.T) { requireTheUsageWalkReadsAsParseAndGet(t, []byte(body)) })
	}
}

func FuzzTheUsageWalkReadsWhatParseAndGetRead(f *testing.F) {
	f.Add([]byte(`{"id":"chatcmpl-1","choices":[{"index":0}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`))
	f.Add([]byte(`{"usage":1,"usage":{"input_tokens":2,"output_tokens":3,"cache_read_input_tokens":1}}`))
	f.Add([]byte(`{"usage":{"input_tokens":2,"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1}}}`))
	f.Fuzz(func(t *testing.T, body []byte) { requireTheUsageWalkReadsAsParseAndGet(t, body) })
}

func requireTheUsageWalkReadsAsParseAndGet(t *testing.T, body []byte) {
	t.Helper()
	for _, api := range []API{OpenAIChat, OpenAICompletions, OpenAIResponses, AnthropicMessages, API(99)} {
		got, ok := FromJSON(api, body)
		want, wantOK := parseThenRead(api, body)
		require.Equal(t, wantOK, ok, "api %d", api)
		require.Equal(t, want, got, "api %d", api)
	}
}

// parseThenRead is FromJSON as two walks: Parse checks the body, then Get
// finds the usage object and the API's reader walks it again.
func parseThenRead(api API, body []byte) (Usage, bool) {
	return objectUsage(api, jsonx.Parse(body).Get("usage"))
}
