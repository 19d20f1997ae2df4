package e2e

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
)

// attempts records every HTTP attempt an SDK makes (its middleware sees each
// one, retries included) and the answer's status and Retry-After.
type attempts struct {
	mu  sync.Mutex
	at  []time.Time
	ans []*http.Response
}

func (a *attempts) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	a.mu.Lock()
	a.at = append(a.at, time.Now())
	a.mu.Unlock()
	res, err := next(req)
	a.mu.Lock()
	a.ans = append(a.ans, res)
	a.mu.Unlock()
	return res, err
}

func (a *attempts) count() int { a.mu.Lock(); defer a.mu.Unlock(); return len(a.at) }

// sdkCall is one official SDK's chat call through the gateway, with the SDK's
// own retry policy (two retries, its default) and an attempt recorder.
type sdkCall struct {
	name string
	call func(ctx context.Context, g *gateway.Gateway, key string, maxTokens int64, rec *attempts) error
}

var sdkCalls = []sdkCall{
	{"openai-go", func(ctx context.Context, g *gateway.Gateway, key string, maxTokens int64, rec *attempts) error {
		c := openai.NewClient(option.WithBaseURL("http://"+g.Addr()+"/v1/"), option.WithAPIKey(key),
			option.WithMaxRetries(2), option.WithMiddleware(rec.middleware), option.WithHeader("x-mock-output-tokens", "1"))
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")}, MaxTokens: openai.Int(maxTokens)})
		return err
	}},
	{"anthropic-sdk-go", func(ctx context.Context, g *gateway.Gateway, key string, maxTokens int64, rec *attempts) error {
		c := anthropic.NewClient(aoption.WithBaseURL("http://"+g.Addr()), aoption.WithAPIKey(key),
			aoption.WithMaxRetries(2), aoption.WithMiddleware(rec.middleware), aoption.WithHeader("x-mock-output-tokens", "1"))
		_, err := c.Messages.New(ctx, anthropic.MessageNewParams{Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: maxTokens,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello there"))}})
		return err
	}},
}

// statusOf is the HTTP status of an SDK error (0 when it is not an API error).
func statusOf(err error) int {
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe.StatusCode
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

// A day budget of 960,000 tokens refills 1,000 tokens in 90 s. The caller
// spends all but ~15,000 of it, then asks for ~16,000 (anthropic-sdk-go
// refuses a non-streamed call whose max_tokens could take more than ten
// minutes, about 21,000): the refusal's wait is
// about 90 s, above the minute past which the filter says not to retry, and
// below openai-go's own two-minute ceiling, so without x-should-retry both
// SDKs would sleep through it.
const dayBudgetConfig = `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_day":960000}},"budget_division":{"replicas":1}}}`

func TestE2EOfficialSDKsDoNotSleepThroughARefusalThatWaitsMoreThanAMinute(t *testing.T) {
	g := startGateway(t, dayBudgetConfig)
	for _, sdk := range sdkCalls {
		t.Run(sdk.name, func(t *testing.T) {
			key := "sk-day-" + sdk.name
			r := post(t, g, "/v1/chat/completions", key, chat(945000), "x-mock-output-tokens", "945000")
			require.Equal(t, 200, r.status, string(r.body))
			rec := &attempts{}
			// The deadline only turns a hang into a failure; a correct run
			// answers at once.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := sdk.call(ctx, g, key, 16000, rec)
			require.Error(t, err)
			require.NoError(t, ctx.Err(), "the SDK returned the refusal instead of sleeping on it")
			require.Equal(t, 429, statusOf(err), err.Error())
			require.Equal(t, 1, rec.count(), "x-should-retry: false: no retry")
			res := rec.ans[0]
			require.Equal(t, "false", res.Header.Get("x-should-retry"))
			wait, perr := strconv.Atoi(res.Header.Get("retry-after"))
			require.NoError(t, perr)
			require.Greater(t, wait, 60, "the wait the caller would have slept through")
			require.Less(t, wait, 120, "inside openai-go's own ceiling, so only the header stops it")
		})
	}
}

// A minute budget of 60,000 tokens refills 1,000 tokens a second: a caller
// who spent 50,000 and asks for 12,000 more waits about two seconds, which the
// SDKs sleep through and retry, and the retry is admitted.
func TestE2EOfficialSDKsRetryARefusalThatWaitsSeconds(t *testing.T) {
	g := startGateway(t, `{"rate_limiting":{"limits":{"per_api_key":{"tokens_per_minute":60000}},"budget_division":{"replicas":1}}}`)
	for _, sdk := range sdkCalls {
		t.Run(sdk.name, func(t *testing.T) {
			key := "sk-minute-" + sdk.name
			r := post(t, g, "/v1/chat/completions", key, chat(50000), "x-mock-output-tokens", "50000")
			require.Equal(t, 200, r.status, string(r.body))
			rec := &attempts{}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			require.NoError(t, sdk.call(ctx, g, key, 12000, rec), "the retry after Retry-After is admitted")
			require.Equal(t, 2, rec.count(), "one refusal, one retry")
			first := rec.ans[0]
			require.Equal(t, 429, first.StatusCode)
			require.Empty(t, first.Header.Get("x-should-retry"), "a wait of seconds is left to the SDK")
			wait, err := strconv.Atoi(first.Header.Get("retry-after"))
			require.NoError(t, err)
			require.GreaterOrEqual(t, wait, 1)
			require.LessOrEqual(t, wait, 60)
			require.GreaterOrEqual(t, rec.at[1].Sub(rec.at[0]), time.Duration(wait)*time.Second,
				"the SDK slept the whole Retry-After before retrying")
			require.Equal(t, 200, rec.ans[1].StatusCode)
		})
	}
}

// A body past the gateway's buffer is a 413 the SDK surfaces with the limit and the flag to
// raise, and does not retry.
func TestE2EAnOversizedBodyIsAnSDKErrorNamingTheLimitAndTheFlag(t *testing.T) {
	g := startGateway(t, `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":1000000}}},"token_budget":{"max_body_bytes":65536}}`,
		func(c *gateway.Config) { c.BufferLimit = 8192 })
	rec := &attempts{}
	c := openai.NewClient(option.WithBaseURL("http://"+g.Addr()+"/v1/"), option.WithAPIKey("sk-big-body"),
		option.WithMaxRetries(2), option.WithMiddleware(rec.middleware))
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("a", 20000))}})
	require.Error(t, err)
	var oe *openai.Error
	require.ErrorAs(t, err, &oe)
	require.Equal(t, 413, oe.StatusCode)
	require.Equal(t, "request_too_large", oe.Code)
	require.Contains(t, oe.Message, "8192 bytes")
	require.Contains(t, oe.Message, "--max-request-bytes")
	require.Equal(t, 1, rec.count())
}
