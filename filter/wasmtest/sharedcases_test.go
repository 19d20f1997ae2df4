package wasmtest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// Cases is the table. Each case names the rule it pins; its Run plays
// exchanges on the host and checks what a client, the upstream or an
// operator (metrics, the access log's filter state) sees.
var Cases = []Case{
	{
		Name:   "AnAdmittedRequestCarriesItsKeysTokenHeadersAndReachesTheUpstreamUncompressed",
		Config: keyBudget,
		Run: func(t *testing.T, h Host) {
			body := ChatBody("hello there", 500)
			r := h.Do(Exchange{Key: "sk-a", Body: body, Headers: [][2]string{{"accept-encoding", "gzip"}},
				Chunks: []string{ChatResponse(10, 5)}})
			require.Equal(t, 200, r.Status)
			require.False(t, r.Local)
			require.Equal(t, "10000", r.Header("x-ratelimit-tokens-limit"))
			require.Equal(t, "1000000", r.Header("x-ratelimit-tokens-day-limit"))
			reserved := ReservedBy(t, r)
			require.Greater(t, reserved, int64(500), "the hold is the input estimate plus the output ceiling")
			require.Less(t, reserved, int64(600))
			require.Empty(t, Get(r.UpstreamHeaders, "accept-encoding"), "the usage block must come back readable")
			require.Equal(t, body, string(r.UpstreamBody), "nothing to rewrite: the body goes up as sent")
			require.Equal(t, ChatResponse(10, 5), string(r.Body))
			require.Equal(t, "admitted", r.Decision["outcome"])
		},
	},
	{
		Name:   "APathTheFilterDoesNotMeterPassesUntouched",
		Config: keyBudget,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Path: "/healthz", Key: "sk-a", Body: "{}", Chunks: []string{"ok"}})
			require.Equal(t, 200, r.Status)
			require.False(t, r.Local)
			require.Empty(t, r.Header("x-ratelimit-tokens-limit"))
			require.Nil(t, r.Decision, "nothing metered, nothing logged")
		},
	},
	{
		Name:   "AKeyWhoseMinuteBudgetIsSpentIsRefusedWithA429AndItsBucketHeaders",
		Config: keyBudget,
		Run: func(t *testing.T, h Host) {
			admitted, last := spend(h, 0, "sk-a")
			require.Equal(t, 4, admitted, "10000 tokens hold four requests of ~2000 plus the estimate")
			require.Equal(t, 429, last.Status)
			require.True(t, last.Local)
			requireTokenRefusal(t, last)
			require.Equal(t, int64(1), h.Counter(metrics.Name(metrics.Exceeded, metrics.LabelLimitType, "token_budget")))
			require.Equal(t, "refused", last.Decision["outcome"])
		},
	},
	{
		Name:   "ARequestCountLimitRefusesTheThirdRequestOfTheMinute",
		Config: `{"rate_limiting":{"limits":{"per_api_key":{"requests_per_minute":2}}}}`,
		Run: func(t *testing.T, h Host) {
			for i := 0; i < 2; i++ {
				require.Equal(t, 200, h.Do(Exchange{Key: "sk-a", Body: ChatBody("hi", 10), Chunks: []string{ChatResponse(1, 1)}}).Status)
			}
			r := h.Do(Exchange{Key: "sk-a", Body: ChatBody("hi", 10), Chunks: []string{ChatResponse(1, 1)}})
			require.Equal(t, 429, r.Status)
			require.True(t, r.Local)
			require.GreaterOrEqual(t, Atoi(t, r.Header("retry-after")), int64(1))
			require.Equal(t, 200, h.Do(Exchange{Key: "sk-b", Body: ChatBody("hi", 10), Chunks: []string{ChatResponse(1, 1)}}).Status,
				"another key has its own count")
		},
	},
	{
		Name:   "AJSONAnswerSettlesOnItsUsageAndRefundsTheRestOfTheHold",
		Config: bigKeyBudget,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: ChatBody("hello", 1000), Chunks: []string{ChatResponse(40, 2)}})
			require.Equal(t, 200, r.Status)
			require.Equal(t, "settled", r.Decision["end"])
			require.Equal(t, float64(42), r.Decision["usage"])
			require.Equal(t, int64(100000-42), Level(t, h, 0, "sk-a"), "the bucket kept only the usage")
		},
	},
	{
		Name:   "AnSSEAnswerSettlesOnItsFinalUsageChunk",
		Config: bigKeyBudget,
		Run: func(t *testing.T, h Host) {
			sse := OpenAIChunk("Once") + OpenAIChunk(" upon") + OpenAIUsageChunk(40, 2) + Done
			r := h.Do(Exchange{Key: "sk-a", Body: StreamBody(1000, true), ContentType: "text/event-stream",
				Chunks: []string{sse[:30], sse[30:]}})
			require.Equal(t, 200, r.Status)
			require.Equal(t, sse, string(r.Body), "the client gets the stream unchanged")
			require.Equal(t, float64(42), r.Decision["usage"])
			require.Equal(t, int64(100000-42), Level(t, h, 0, "sk-a"))
		},
	},
	{
		Name:   "TheUsageTheFilterAskedForIsInjectedUpstreamAndTakenOutOfTheClientsStream",
		Config: injectBudget,
		Run: func(t *testing.T, h Host) {
			sse := OpenAIChunk("Hi") + OpenAIUsageChunk(40, 2) + Done
			r := h.Do(Exchange{Key: "sk-a", Body: StreamBody(1000, false), ContentType: "text/event-stream", Chunks: []string{sse}})
			require.Equal(t, 200, r.Status)
			var up map[string]any
			require.NoError(t, json.Unmarshal(r.UpstreamBody, &up), string(r.UpstreamBody))
			require.Equal(t, map[string]any{"include_usage": true}, up["stream_options"])
			require.Empty(t, Get(r.UpstreamHeaders, "content-length"), "the rewritten body is framed by the proxy")
			require.Equal(t, OpenAIChunk("Hi")+Done, string(r.Body), "the client never asked for the usage chunk")
			require.Equal(t, float64(42), r.Decision["usage"])
		},
	},
	{
		Name:   "AnAnthropicStreamSettlesOnItsStartAndDeltaUsage",
		Config: bigKeyBudget,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Path: "/v1/messages", Key: "sk-a", Body: anthropicBody, ContentType: "text/event-stream",
				Chunks: []string{anthropicSSE}})
			require.Equal(t, 200, r.Status)
			require.Equal(t, float64(47), r.Decision["usage"], "30 input + 5 cache read + 12 output")
		},
	},
	{
		Name:   "ACutStreamIsChargedWhatItDelivered",
		Config: bigKeyBudget,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: StreamBody(1000, true), ContentType: "text/event-stream",
				Chunks: []string{OpenAIChunk("Once upon a time there was a long answer")}, Cut: true})
			require.Equal(t, "cut", r.Decision["end"])
			charged := r.Decision["usage"].(float64)
			require.Positive(t, charged, "reading an answer and resetting buys nothing")
			require.Less(t, charged, float64(1000), "but only what was delivered, not the whole ceiling")
			require.Equal(t, int64(100000)-int64(charged), Level(t, h, 0, "sk-a"))
		},
	},
	{
		Name:   "AnUpstreamErrorReleasesTheHold",
		Config: bigKeyBudget,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: ChatBody("hi", 3000), Status: 500, Chunks: []string{`{"error":{}}`}})
			require.Equal(t, 500, r.Status)
			require.Equal(t, "released", r.Decision["end"])
			require.Equal(t, int64(100000), Level(t, h, 0, "sk-a"))
		},
	},
	{
		Name:   "ARequestWithoutAKeyIsRefused401WhenKeysAreRequired",
		Config: `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000}}},"identity":{"missing_api_key":"refuse"}}`,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Body: ChatBody("hi", 10)})
			require.Equal(t, 401, r.Status)
			require.True(t, r.Local)
			require.Equal(t, "invalid_api_key", errorOf(t, r)["code"])
			require.Equal(t, "unauthorized", r.Decision["outcome"])
		},
	},
	{
		Name:   "TwoDifferentKeysOnOneRequestAreRefused400",
		Config: keyBudget,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Headers: [][2]string{{"x-api-key", "sk-b"}}, Body: ChatBody("hi", 10)})
			require.Equal(t, 400, r.Status)
			require.True(t, r.Local)
			require.Equal(t, "conflicting_api_keys", errorOf(t, r)["code"])
		},
	},
	{
		Name:   "ARequestNamingItsCeilingTwiceIsRefused400",
		Config: keyBudget,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":10,"max_tokens":99999}`})
			require.Equal(t, 400, r.Status)
			require.True(t, r.Local)
			require.Equal(t, "duplicate_field", errorOf(t, r)["code"])
			require.Equal(t, "invalid", r.Decision["outcome"])
		},
	},
	{
		Name:   "ACeilingAboveTheModelsLimitIsRefused400",
		Config: strings.Replace(modelLimits, "%MODE%", "refuse", 1),
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: ChatBody("hello", 2000)})
			require.Equal(t, 400, r.Status)
			require.True(t, r.Local)
			require.Equal(t, "max_tokens_exceeded", errorOf(t, r)["code"])
		},
	},
	{
		Name:   "UnderClampTheUpstreamIsToldTheModelsCeiling",
		Config: strings.Replace(modelLimits, "%MODE%", "clamp", 1),
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: ChatBody("hello", 2000), Chunks: []string{ChatResponse(5, 5)}})
			require.Equal(t, 200, r.Status)
			var up map[string]any
			require.NoError(t, json.Unmarshal(r.UpstreamBody, &up), string(r.UpstreamBody))
			require.Equal(t, float64(1000), up["max_tokens"])
			require.Less(t, ReservedBy(t, r), int64(1100), "the hold reserves the clamped ceiling")
		},
	},
	{
		Name:   "ABudgetSpentThroughOnePluginContextIsSpentForTheOther",
		Config: keyBudget,
		Run: func(t *testing.T, h Host) {
			admitted, last := spend(h, 0, "sk-a")
			require.Equal(t, 4, admitted)
			require.Equal(t, 429, last.Status)
			other := h.Do(Exchange{Plugin: 1, Key: "sk-a", Body: ChatBody("hello", 2000), Chunks: []string{ChatResponse(2000, 0)}})
			require.Equal(t, 429, other.Status, "the second plugin context reads the same shared-data bucket")
			requireTokenRefusal(t, other)
			require.Equal(t, 200, h.Do(Exchange{Plugin: 1, Key: "sk-b", Body: ChatBody("hello", 10), Chunks: []string{ChatResponse(1, 1)}}).Status)
		},
	},
	{
		Name:   "TheFleetStoreAdmitsThroughACalloutAndCountsAcrossPluginContexts",
		Config: fleet(`"requests_per_minute":2`, false),
		Store:  FleetStore,
		Run: func(t *testing.T, h Host) {
			for p := 0; p < 2; p++ {
				r := h.Do(Exchange{Plugin: p, Key: "sk-fleet", Body: ChatBody("hi", 10), Chunks: []string{ChatResponse(1, 1)}})
				require.Equal(t, 200, r.Status, "plugin %d: %s", p, r.Body)
				require.Equal(t, "admitted", r.Decision["outcome"])
				require.Nil(t, r.Decision["fallback"], "the store answered")
			}
			r := h.Do(Exchange{Key: "sk-fleet", Body: ChatBody("hi", 10), Chunks: []string{ChatResponse(1, 1)}})
			require.Equal(t, 429, r.Status, "the store counted both plugin contexts' requests")
			require.True(t, r.Local)
		},
	},
	{
		Name:   "TheFleetStoreSettlesAStreamedAnswerOnItsUsage",
		Config: fleet(`"tokens_per_minute":100000`, false),
		Store:  FleetStore,
		Run: func(t *testing.T, h Host) {
			sse := OpenAIChunk("Hi") + OpenAIUsageChunk(40, 2) + Done
			r := h.Do(Exchange{Key: "sk-fleet", Body: StreamBody(1000, true), ContentType: "text/event-stream", Chunks: []string{sse}})
			require.Equal(t, 200, r.Status, string(r.Body))
			require.Equal(t, "settled", r.Decision["end"])
			require.Equal(t, float64(42), r.Decision["usage"])
		},
	},
	{
		Name:   "AStreamResetWhileItsAdmissionIsPendingGivesBackWhatTheStoreReserved",
		Config: fleet(`"tokens_per_minute":10000`, false),
		Store:  FleetStore,
		Run: func(t *testing.T, h Host) {
			h.Do(Exchange{Key: "sk-reset", Body: ChatBody("hello", 6000), ResetPending: true})
			// The release travels as a callout of its own after the late
			// answer: poll until the budget is back (a refusal reserves nothing).
			var r Reply
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				r = h.Do(Exchange{Key: "sk-reset", Body: ChatBody("hello", 6000), Chunks: []string{ChatResponse(1, 1)}})
				if r.Status == 200 {
					break
				}
			}
			require.Equal(t, 200, r.Status, "the late answer's hold was released: %s", r.Body)
		},
	},
	{
		Name:   "AStoreThatIsDownFailsClosedWithA503WhenFallbackIsOff",
		Config: fleet(`"tokens_per_minute":100000`, false),
		Store:  StoreDown,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: ChatBody("hi", 10), Chunks: []string{ChatResponse(1, 1)}})
			require.Equal(t, 503, r.Status)
			require.True(t, r.Local)
			require.Equal(t, "5", r.Header("retry-after"))
			require.Equal(t, "unavailable", r.Decision["outcome"])
		},
	},
	{
		Name:   "AStoreThatIsDownAdmitsOnLocalBucketsWhenFallbackIsOn",
		Config: fleet(`"tokens_per_minute":100000`, true),
		Store:  StoreDown,
		Run: func(t *testing.T, h Host) {
			r := h.Do(Exchange{Key: "sk-a", Body: ChatBody("hi", 10), Chunks: []string{ChatResponse(1, 1)}})
			require.Equal(t, 200, r.Status)
			require.Equal(t, "100000", r.Header("x-ratelimit-tokens-limit"))
			require.Equal(t, true, r.Decision["fallback"])
			require.Equal(t, int64(1), h.Counter(metrics.Name(metrics.RedisUnavailable, metrics.LabelDimension, "api_key", metrics.LabelAction, "fallback")))
		},
	},
}

const keyBudget = `{
  "rate_limiting": {
    "limits": { "per_api_key": { "tokens_per_minute": 10000, "tokens_per_day": 1000000 } },
    "budget_division": { "replicas": 1 }
  }
}`

const bigKeyBudget = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
  "token_budget":{"inject_stream_usage":false}}`

const injectBudget = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
  "token_budget":{"inject_stream_usage":true}}`

const modelLimits = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":100000}},"budget_division":{"replicas":1}},
  "token_budget":{"default_output_tokens":500},
  "models":{"gpt-4o":{"max_tokens_per_request":1000,"max_context_length":2000,"on_max_tokens":"%MODE%"}}}`

// fleet is a configuration on the fleet store with the given per-key
// limits.
func fleet(limits string, fallback bool) string {
	return `{"rate_limiting":{"storage":"redis","limits":{"per_api_key":{` + limits + `}},"budget_division":{"replicas":1},
	  "redis":{"cluster":"sharedstore","token":"` + StoreToken + `","timeout_ms":1000,"fallback_to_memory":` + strconv.FormatBool(fallback) + `}}}`
}

const anthropicBody = `{"model":"claude","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

const anthropicSSE = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"usage\":{\"input_tokens\":30,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n" +
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n" +
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":12}}\n\n" +
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"

// spend sends requests of ~2000 tokens for key on plugin context p until
// one is refused (at most ten) and returns how many were admitted and the
// last reply. Each answer's usage equals its ceiling, so the bucket drains.
func spend(h Host, p int, key string) (int, Reply) {
	body := ChatBody("hello", 2000)
	admitted := 0
	var last Reply
	for i := 0; i < 10; i++ {
		last = h.Do(Exchange{Plugin: p, Key: key, Body: body, Chunks: []string{ChatResponse(2000, 0)}})
		if last.Status != 200 {
			break
		}
		admitted++
	}
	return admitted, last
}

// requireTokenRefusal checks a 429 of the per-key minute token budget: the
// OpenAI-style error body with its details, Retry-After and the bucket's
// headers.
func requireTokenRefusal(t *testing.T, r Reply) {
	t.Helper()
	d := errorOf(t, r)["details"].(map[string]any)
	require.Equal(t, "token_budget", d["limit_type"])
	require.Equal(t, "api_key", d["token_dimension"])
	require.Equal(t, "minute", d["token_budget"])
	require.Contains(t, d, "capacity")
	require.Contains(t, d, "remaining")
	require.Equal(t, "10000", r.Header("x-ratelimit-tokens-limit"))
	require.NotEmpty(t, r.Header("x-ratelimit-tokens-remaining"))
	ra := Atoi(t, r.Header("retry-after"))
	require.GreaterOrEqual(t, ra, int64(1))
	require.LessOrEqual(t, ra, int64(60))
	require.True(t, strings.HasPrefix(r.Header("content-type"), "application/json"), r.Header("content-type"))
}

func errorOf(t *testing.T, r Reply) map[string]any {
	t.Helper()
	e, ok := r.JSON(t)["error"].(map[string]any)
	require.True(t, ok, "an OpenAI-style error body: %s", r.Body)
	return e
}

// ReservedBy is what one request reserved on a fresh bucket: its limit
// minus what remained.
func ReservedBy(t testing.TB, r Reply) int64 {
	t.Helper()
	return Atoi(t, r.Header("x-ratelimit-tokens-limit")) - Atoi(t, r.Header("x-ratelimit-tokens-remaining"))
}

// Level reads key's minute level on plugin context p: a probe request's
// remaining header plus what the probe itself reserved (learnt on a fresh
// key); the probe settles at zero, so it leaves the level as it was.
func Level(t testing.TB, h Host, p int, key string) int64 {
	t.Helper()
	probe := func(k string) Reply {
		r := h.Do(Exchange{Plugin: p, Key: k, Body: ChatBody("hello", 10), Chunks: []string{ChatResponse(0, 0)}})
		require.Equal(t, 200, r.Status)
		return r
	}
	reserve := ReservedBy(t, probe(key+"-fresh-probe"))
	return Atoi(t, probe(key).Header("x-ratelimit-tokens-remaining")) + reserve
}

// ChatBody is an OpenAI chat request for gpt-4o.
func ChatBody(content string, maxTokens int) string {
	b, _ := json.Marshal(map[string]any{
		"model":      "gpt-4o",
		"messages":   []map[string]string{{"role": "user", "content": content}},
		"max_tokens": maxTokens,
	})
	return string(b)
}

// ChatResponse is an OpenAI chat answer with its usage block.
func ChatResponse(prompt, completion int) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":` +
		strconv.Itoa(prompt) + `,"completion_tokens":` + strconv.Itoa(completion) + `,"total_tokens":` + strconv.Itoa(prompt+completion) + `}}`
}

// StreamBody is a streamed OpenAI chat request.
func StreamBody(maxTokens int, includeUsage bool) string {
	m := map[string]any{
		"model": "gpt-4o", "stream": true, "max_tokens": maxTokens,
		"messages": []map[string]string{{"role": "user", "content": "tell me a story"}},
	}
	if includeUsage {
		m["stream_options"] = map[string]any{"include_usage": true}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// OpenAIChunk is one streamed content delta.
func OpenAIChunk(content string) string {
	return `data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}],"usage":null}` + "\n\n"
}

// OpenAIUsageChunk is the usage-only chunk include_usage asks for.
func OpenAIUsageChunk(prompt, completion int) string {
	return `data: {"id":"c1","object":"chat.completion.chunk","model":"gpt-4o","choices":[],"usage":{"prompt_tokens":` +
		strconv.Itoa(prompt) + `,"completion_tokens":` + strconv.Itoa(completion) + `,"total_tokens":` + strconv.Itoa(prompt+completion) + `}}` + "\n\n"
}

// Done ends an OpenAI stream.
const Done = "data: [DONE]\n\n"
