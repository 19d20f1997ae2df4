package e2e

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

const sdkConfig = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":1000000}},"budget_division":{"replicas":1}}}`

// ledger reads a key's minute level through a probe request whose own
// reservation is learned on a fresh key; the probe's usage (as the mock
// reports it) is then subtracted, so the ledger stays exact.
type ledger struct {
	t       testing.TB
	g       *gateway.Gateway
	reserve int64
}

const probeBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"probe"}],"max_tokens":1}`

func newLedger(t testing.TB, g *gateway.Gateway) *ledger {
	r := post(t, g, "/v1/chat/completions", "sk-fresh-probe", probeBody, "x-mock-output-tokens", "0")
	require.Equal(t, 200, r.status, string(r.body))
	return &ledger{t: t, g: g, reserve: 1000000 - atoi(t, r.header.Get("x-ratelimit-tokens-remaining"))}
}

// level is the key's level before the probe; the probe then spends
// mockllm.InputTokens(probeBody) of it.
func (l *ledger) level(key string) int64 {
	// A client can read the last byte before the proxy hands the filter the
	// end of the stream (Envoy gives no ordering either): wait until every
	// earlier stream is done, and so settled, before reading the level.
	require.Eventually(l.t, func() bool { return l.g.Host().OpenStreams() == 0 }, 5*time.Second, time.Millisecond)
	// The probe may run on another worker than the settlement, which sees
	// its refund once a tick has written it to shared data.
	l.g.Host().Tick()
	r := post(l.t, l.g, "/v1/chat/completions", key, probeBody, "x-mock-output-tokens", "0")
	require.Equal(l.t, 200, r.status, string(r.body))
	return atoi(l.t, r.header.Get("x-ratelimit-tokens-remaining")) + l.reserve
}

func (l *ledger) probeCost() int64 { return mockllm.InputTokens([]byte(probeBody)) }

// servedLog keeps what the mock backend answered, in order.
type servedLog struct {
	mu  sync.Mutex
	all []mockllm.Served
}

func (l *servedLog) add(s mockllm.Served) { l.mu.Lock(); l.all = append(l.all, s); l.mu.Unlock() }

func (l *servedLog) count() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.all) }

// streamFrom returns the first streamed record at or after index n, waiting
// for the mock to write it. The mock records a request when its handler
// returns, which may be just after the client read the last byte, so the
// non-streamed probe read just before may land at index n itself.
func (l *servedLog) streamFrom(t testing.TB, n int) mockllm.Served {
	deadline := time.Now().Add(5 * time.Second)
	for {
		l.mu.Lock()
		for _, s := range l.all[min(n, len(l.all)):] {
			if s.Stream {
				l.mu.Unlock()
				return s
			}
		}
		l.mu.Unlock()
		require.True(t, time.Now().Before(deadline), "the mock never recorded a stream from request %d", n)
		time.Sleep(time.Millisecond)
	}
}

func atoi(t testing.TB, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, s)
	return n
}

// expectSpent checks the key's bucket moved by exactly what the SDK says the
// backend used.
func expectSpent(t *testing.T, l *ledger, key string, call func() int64) {
	t.Helper()
	before := l.level(key)
	used := call()
	require.Positive(t, used)
	after := l.level(key)
	require.Equal(t, before-l.probeCost()-used, after, "the budget moves as the usage says")
}

func TestE2EOfficialSDKsSettleExactlyWhatTheBackendReported(t *testing.T) {
	clock := &frozenClock{t: time.Unix(1_800_000_000, 0)}
	served := &servedLog{}
	g := startGateway(t, sdkConfig, withClock(clock), func(c *gateway.Config) { c.UpstreamHandler = mockllm.New(mockllm.Options{OnServed: served.add}) })
	l := newLedger(t, g)
	ctx := context.Background()
	base := "http://" + g.Addr()
	oa := func(key string, out int) *openai.Client {
		c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
			option.WithHeader("x-mock-output-tokens", strconv.Itoa(out)))
		return &c
	}
	an := func(key, path string, out int) *anthropic.Client {
		c := anthropic.NewClient(aoption.WithBaseURL(base+path), aoption.WithAPIKey(key), aoption.WithMaxRetries(0),
			aoption.WithHeader("x-mock-output-tokens", strconv.Itoa(out)), aoption.WithHeader("x-mock-cached-tokens", "3"))
		return &c
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("tell me about budgets")}

	t.Run("openai chat", func(t *testing.T) {
		expectSpent(t, l, "sk-chat", func() int64 {
			res, err := oa("sk-chat", 42).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs, MaxTokens: openai.Int(500)})
			require.NoError(t, err)
			return res.Usage.PromptTokens + res.Usage.CompletionTokens
		})
	})
	for _, include := range []bool{true, false} {
		t.Run("openai chat stream include_usage="+strconv.FormatBool(include), func(t *testing.T) {
			key := "sk-chat-stream-" + strconv.FormatBool(include)
			expectSpent(t, l, key, func() int64 {
				p := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs, MaxTokens: openai.Int(500)}
				if include {
					p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				}
				n := served.count()
				s := oa(key, 17).Chat.Completions.NewStreaming(ctx, p)
				acc := openai.ChatCompletionAccumulator{}
				usageChunks := 0
				for s.Next() {
					if s.Current().JSON.Usage.Valid() {
						usageChunks++
					}
					acc.AddChunk(s.Current())
				}
				require.NoError(t, s.Err())
				if include {
					require.Equal(t, 1, usageChunks)
					return acc.Usage.PromptTokens + acc.Usage.CompletionTokens
				}
				// Without include_usage the filter injects it so the backend
				// reports usage, and takes the extra chunk back out: the SDK
				// sees none. What the backend reported is the mock's record.
				require.Zero(t, usageChunks, "the client gets the stream it asked for")
				last := served.streamFrom(t, n)
				require.True(t, last.Completed)
				return last.InputTokens + last.OutputTokens
			})
		})
	}
	t.Run("openai responses", func(t *testing.T) {
		expectSpent(t, l, "sk-resp", func() int64 {
			res, err := oa("sk-resp", 23).Responses.New(ctx, responses.ResponseNewParams{
				Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("summarise budgets")},
				MaxOutputTokens: openai.Int(400)})
			require.NoError(t, err)
			return res.Usage.InputTokens + res.Usage.OutputTokens
		})
	})
	t.Run("openai responses stream", func(t *testing.T) {
		expectSpent(t, l, "sk-resp-stream", func() int64 {
			s := oa("sk-resp-stream", 9).Responses.NewStreaming(ctx, responses.ResponseNewParams{
				Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("summarise budgets")},
				MaxOutputTokens: openai.Int(400)})
			var used int64
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					used = ev.Response.Usage.InputTokens + ev.Response.Usage.OutputTokens
				}
			}
			require.NoError(t, s.Err())
			return used
		})
	})
	for _, path := range []string{"", "/anthropic"} {
		params := anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 300,
			System:   []anthropic.TextBlockParam{{Text: "be brief"}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("tell me about budgets"))}}
		// Anthropic's input_tokens excludes cache reads; the backend read them too.
		total := func(u anthropic.Usage) int64 {
			return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens + u.OutputTokens
		}
		t.Run("anthropic messages"+path, func(t *testing.T) {
			key := "sk-ant" + path
			expectSpent(t, l, key, func() int64 {
				m, err := an(key, path, 31).Messages.New(ctx, params)
				require.NoError(t, err)
				return total(m.Usage)
			})
		})
		t.Run("anthropic messages stream"+path, func(t *testing.T) {
			key := "sk-ant-stream" + path
			expectSpent(t, l, key, func() int64 {
				s := an(key, path, 12).Messages.NewStreaming(ctx, params)
				acc := anthropic.Message{}
				for s.Next() {
					require.NoError(t, acc.Accumulate(s.Current()))
				}
				require.NoError(t, s.Err())
				return total(acc.Usage)
			})
		})
	}
}
