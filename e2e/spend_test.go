package e2e

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// Prices in nano-USD per million tokens, as written in spendE2EConfig; each
// kind has its own rate so a token priced at the wrong kind shows.
var (
	gptRates    = rates{input: 2_500_000_000, cached: 1_250_000_000, output: 10_000_000_000}
	claudeRates = rates{input: 3_000_000_000, cached: 300_000_000, write: 3_750_000_000, output: 15_000_000_000}
)

const spendE2EConfig = `{
  "rate_limiting": {"limits": {"per_api_key": {"tokens_per_minute": 100000000}}, "budget_division": {"replicas": 1}},
  "pricing": {
    "gpt-4o": {"input": "2.50", "cached_input": "1.25", "output": "10"},
    "claude-sonnet-4-5": {"input": 3, "cached_input": "0.30", "cache_write": "3.75", "output": 15}
  },
  "api_keys": [
    {"key": "sk-oa", "id": "oa", "spend_limit_month_usd": 100},
    {"key": "sk-oa-stream", "id": "oa-stream", "spend_limit_month_usd": 100},
    {"key": "sk-an", "id": "an", "spend_limit_month_usd": 100},
    {"key": "sk-an-stream", "id": "an-stream", "spend_limit_month_usd": 100},
    {"key": "sk-daily", "id": "daily", "spend_limit_day_usd": "0.02", "spend_limit_month_usd": 100}
  ]
}`

type rates struct{ input, cached, write, output int64 }

// priced is what tokens cost at r, computed apart from the filter's code:
// the exact sum of tokens × rate, divided by a million and rounded up once.
func priced(r rates, uncached, cached, write, output int64) int64 {
	sum := new(big.Int)
	for _, p := range [][2]int64{{uncached, r.input}, {cached, r.cached}, {write, r.write}, {output, r.output}} {
		sum.Add(sum, new(big.Int).Mul(big.NewInt(p[0]), big.NewInt(p[1])))
	}
	q, m := new(big.Int).DivMod(sum, big.NewInt(1_000_000), new(big.Int))
	if m.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// spentNano is the gateway's rate_limit_spend_usd_total{scope="api_key"}
// once every stream has settled.
func spentNano(t testing.TB, g *gateway.Gateway) int64 {
	t.Helper()
	require.Eventually(t, func() bool { return g.Host().OpenStreams() == 0 }, 5*time.Second, time.Millisecond)
	g.Host().Tick() // the filter hands its counters to the proxy on its tick
	v, _ := g.Host().Metric(metrics.Name(metrics.SpendUSD, metrics.LabelScope, "api_key"))
	return int64(v)
}

func TestE2EReportedSpendEqualsTheSDKsPricedUsageToTheNanoDollar(t *testing.T) {
	g := startGateway(t, spendE2EConfig)
	ctx := context.Background()
	base := "http://" + g.Addr()
	oa := func(key string) *openai.Client {
		c := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
			option.WithHeader("x-mock-output-tokens", "137"), option.WithHeader("x-mock-cached-tokens", "5"))
		return &c
	}
	an := func(key string) *anthropic.Client {
		c := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey(key), aoption.WithMaxRetries(0),
			aoption.WithHeader("x-mock-output-tokens", "91"), aoption.WithHeader("x-mock-cached-tokens", "4"),
			aoption.WithHeader("x-mock-cache-write-tokens", "3"))
		return &c
	}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("tell me about spend limits")}
	aparams := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 300,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("tell me about spend limits"))}}

	cases := []struct {
		name string
		call func(t *testing.T) int64 // the SDK's usage, priced
	}{
		{"openai chat", func(t *testing.T) int64 {
			res, err := oa("sk-oa").Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs, MaxTokens: openai.Int(500)})
			require.NoError(t, err)
			u := res.Usage
			c := u.PromptTokensDetails.CachedTokens
			require.Positive(t, c)
			return priced(gptRates, u.PromptTokens-c, c, 0, u.CompletionTokens)
		}},
		{"openai chat stream", func(t *testing.T) int64 {
			s := oa("sk-oa-stream").Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: msgs,
				MaxTokens: openai.Int(500), StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
			acc := openai.ChatCompletionAccumulator{}
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			require.NoError(t, s.Err())
			u := acc.Usage
			c := u.PromptTokensDetails.CachedTokens
			return priced(gptRates, u.PromptTokens-c, c, 0, u.CompletionTokens)
		}},
		{"anthropic messages", func(t *testing.T) int64 {
			m, err := an("sk-an").Messages.New(ctx, aparams)
			require.NoError(t, err)
			u := m.Usage
			require.Positive(t, u.CacheCreationInputTokens)
			return priced(claudeRates, u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens)
		}},
		{"anthropic messages stream", func(t *testing.T) int64 {
			s := an("sk-an-stream").Messages.NewStreaming(ctx, aparams)
			acc := anthropic.Message{}
			for s.Next() {
				require.NoError(t, acc.Accumulate(s.Current()))
			}
			require.NoError(t, s.Err())
			u := acc.Usage
			return priced(claudeRates, u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := spentNano(t, g)
			want := c.call(t)
			require.Positive(t, want)
			require.Equal(t, want, spentNano(t, g)-before, "the gateway's spend is the SDK's usage at the listed prices")
		})
	}
}

func TestE2EAKeyIsRefusedAtItsDailySpendLimit(t *testing.T) {
	g := startGateway(t, spendE2EConfig)
	c := openai.NewClient(option.WithBaseURL("http://"+g.Addr()+"/v1/"), option.WithAPIKey("sk-daily"),
		option.WithMaxRetries(3), option.WithHeader("x-mock-output-tokens", "900")) // $0.009 of output each
	p := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		MaxTokens: openai.Int(900)}
	var apiErr *openai.Error
	admitted := 0
	for i := 0; i < 5; i++ {
		_, err := c.Chat.Completions.New(context.Background(), p)
		if err != nil {
			require.True(t, errors.As(err, &apiErr), err)
			break
		}
		admitted++
	}
	require.Equal(t, 2, admitted, "$0.02 a day: two answers of just over $0.009 fit, a third's maximum cost does not")
	require.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	require.Equal(t, "insufficient_quota", apiErr.Type)
	require.Equal(t, "spend_limit_exceeded", apiErr.Code)
	require.Equal(t, "API Key daily spend limit exceeded.", apiErr.Message)
	require.Equal(t, "false", apiErr.Response.Header.Get("x-should-retry"), "the SDK does not retry it")
	g.Host().Tick()
	refusals, _ := g.Host().Metric(metrics.Name(metrics.SpendRefusals, metrics.LabelScope, "api_key", metrics.LabelPeriod, "day"))
	require.Equal(t, int64(1), refusals, "one refusal: x-should-retry kept the SDK's three retries from running")
}

func TestE2EACallStraddlingUTCMidnightCountsInTheDayItStarted(t *testing.T) {
	clock := &frozenClock{t: time.Date(2026, 9, 30, 23, 59, 59, 0, time.UTC)}
	g := startGateway(t, spendE2EConfig, withClock(clock))
	c := anthropic.NewClient(aoption.WithBaseURL("http://"+g.Addr()), aoption.WithAPIKey("sk-daily"), aoption.WithMaxRetries(0),
		aoption.WithHeader("x-mock-output-tokens", "40"), aoption.WithHeader("x-mock-tokens-per-chunk", "1"))
	s := c.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("count to forty"))}})
	acc := anthropic.Message{}
	events := 0
	for s.Next() {
		if events++; events == 2 {
			clock.mu.Lock()
			clock.t = time.Date(2026, 10, 1, 0, 0, 3, 0, time.UTC) // the answer ends in October
			clock.mu.Unlock()
		}
		require.NoError(t, acc.Accumulate(s.Current()))
	}
	require.NoError(t, s.Err())
	u := acc.Usage
	cost := priced(claudeRates, u.InputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens, u.OutputTokens)
	require.Equal(t, cost, spentNano(t, g))

	// Back to September 30 (23:59:59 still): the day holds the cost.
	clock.mu.Lock()
	clock.t = time.Date(2026, 9, 30, 23, 59, 59, 500, time.UTC)
	clock.mu.Unlock()
	sep := post(t, g, "/v1/chat/completions", "sk-daily", chat(10), "x-mock-output-tokens", "0")
	require.Equal(t, usdText(20_000_000-cost), sep.header.Get("x-spend-day-remaining-usd"), "September 30 was charged")
	require.Equal(t, "1790812800", sep.header.Get("x-spend-day-reset"))

	// October 1: a new day and month, untouched by the call that ended in it.
	clock.mu.Lock()
	clock.t = time.Date(2026, 10, 1, 0, 0, 5, 0, time.UTC)
	clock.mu.Unlock()
	oct := post(t, g, "/v1/chat/completions", "sk-daily", chat(10), "x-mock-output-tokens", "0")
	require.Equal(t, "0.02", oct.header.Get("x-spend-day-remaining-usd"))
	require.Equal(t, "100.00", oct.header.Get("x-spend-month-remaining-usd"))
}

// usdText is nano-USD as the spend headers write it (two to nine places).
func usdText(nano int64) string {
	s := strconv.FormatInt(nano/1_000_000_000, 10) + "."
	frac := strconv.FormatInt(1_000_000_000+nano%1_000_000_000, 10)[1:]
	for len(frac) > 2 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	return s + frac
}
