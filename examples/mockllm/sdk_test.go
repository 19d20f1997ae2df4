package mockllm_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/examples/mockllm"
)

// The prompt "count these five words please" is one user message: 4 + 5 = 9 input tokens.
const prompt = "count these five words please"

func startMock(t *testing.T) (*httptest.Server, *mockllm.Tally) {
	t.Helper()
	tally := &mockllm.Tally{}
	srv := httptest.NewServer(mockllm.New(mockllm.Options{OnServed: tally.Observe}))
	t.Cleanup(srv.Close)
	return srv, tally
}

// waitCount waits for the mock's records: it records after writing its answer, so the client can
// hold the answer before the record exists.
func waitCount(t *testing.T, tally *mockllm.Tally, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, tally.WaitCount(ctx, n))
}

func openAIClient(srv *httptest.Server, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(srv.URL + "/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(0),
	}, opts...)...)
}

func anthropicClient(base string, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0),
	}, opts...)...)
}

func TestOpenAIChatNonStreamUsageMatchesInputTokensAndOutputHeader(t *testing.T) {
	srv, tally := startMock(t)
	c := openAIClient(srv, option.WithHeader("x-mock-output-tokens", "7"), option.WithHeader("x-mock-cached-tokens", "3"))
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	})
	require.NoError(t, err)
	require.Equal(t, int64(9), res.Usage.PromptTokens)
	require.Equal(t, int64(7), res.Usage.CompletionTokens)
	require.Equal(t, int64(16), res.Usage.TotalTokens)
	require.Equal(t, int64(3), res.Usage.PromptTokensDetails.CachedTokens)
	require.Len(t, strings.Fields(res.Choices[0].Message.Content), 7)
	require.Equal(t, "gpt-4o", res.Model)
	waitCount(t, tally, 1)
	require.Equal(t, int64(9), tally.All()[0].InputTokens)
}

func TestOpenAIChatStreamSendsUsageChunkOnlyWithIncludeUsage(t *testing.T) {
	for _, include := range []bool{true, false} {
		t.Run(map[bool]string{true: "include_usage", false: "no_usage"}[include], func(t *testing.T) {
			srv, _ := startMock(t)
			c := openAIClient(srv, option.WithHeader("x-mock-output-tokens", "5"))
			params := openai.ChatCompletionNewParams{
				Model:     "gpt-4o",
				Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				MaxTokens: openai.Int(4), // caps the 5 requested tokens
			}
			if include {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			}
			stream := c.Chat.Completions.NewStreaming(context.Background(), params)
			var text strings.Builder
			var usageChunks int
			var usage openai.CompletionUsage
			for stream.Next() {
				ch := stream.Current()
				if ch.JSON.Usage.Valid() {
					usageChunks++
					usage = ch.Usage
					require.Empty(t, ch.Choices, "the usage chunk has no choices")
				}
				for _, choice := range ch.Choices {
					text.WriteString(choice.Delta.Content)
				}
			}
			require.NoError(t, stream.Err())
			require.Len(t, strings.Fields(text.String()), 4)
			if !include {
				require.Zero(t, usageChunks)
				return
			}
			require.Equal(t, 1, usageChunks)
			require.Equal(t, int64(9), usage.PromptTokens)
			require.Equal(t, int64(4), usage.CompletionTokens)
		})
	}
}

func TestOpenAILegacyCompletionsStreamReportsUsage(t *testing.T) {
	srv, _ := startMock(t)
	c := openAIClient(srv, option.WithHeader("x-mock-output-tokens", "3"))
	stream := c.Completions.NewStreaming(context.Background(), openai.CompletionNewParams{
		Model:         openai.CompletionNewParamsModel("gpt-3.5-turbo-instruct"),
		Prompt:        openai.CompletionNewParamsPromptUnion{OfString: openai.String("say this")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var usage openai.CompletionUsage
	for stream.Next() {
		if ch := stream.Current(); ch.JSON.Usage.Valid() {
			usage = ch.Usage
		}
	}
	require.NoError(t, stream.Err())
	require.Equal(t, int64(4+2), usage.PromptTokens)
	require.Equal(t, int64(3), usage.CompletionTokens)
}

func TestOpenAIResponsesUsageNonStreamAndStream(t *testing.T) {
	srv, _ := startMock(t)
	c := openAIClient(srv, option.WithHeader("x-mock-output-tokens", "6"), option.WithHeader("x-mock-cached-tokens", "2"))
	params := responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)},
	}
	res, err := c.Responses.New(context.Background(), params)
	require.NoError(t, err)
	require.Equal(t, int64(9), res.Usage.InputTokens)
	require.Equal(t, int64(6), res.Usage.OutputTokens)
	require.Equal(t, int64(15), res.Usage.TotalTokens)
	require.Equal(t, int64(2), res.Usage.InputTokensDetails.CachedTokens)
	require.Len(t, strings.Fields(res.OutputText()), 6)

	stream := c.Responses.NewStreaming(context.Background(), params)
	var deltas strings.Builder
	var completed *responses.Response
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			completed = &r
		}
	}
	require.NoError(t, stream.Err())
	require.NotNil(t, completed)
	require.Equal(t, int64(9), completed.Usage.InputTokens)
	require.Equal(t, int64(6), completed.Usage.OutputTokens)
	require.Equal(t, completed.OutputText(), deltas.String())
}

func TestOpenAIResponsesCompactReportsUsage(t *testing.T) {
	srv, _ := startMock(t)
	c := openAIClient(srv, option.WithHeader("x-mock-output-tokens", "2"))
	res, err := c.Responses.Compact(context.Background(), responses.ResponseCompactParams{
		Model: "gpt-4o",
		Input: responses.ResponseCompactParamsInputUnion{OfString: openai.String(prompt)},
	})
	require.NoError(t, err)
	require.Equal(t, int64(9), res.Usage.InputTokens)
	require.Equal(t, int64(2), res.Usage.OutputTokens)
}

func TestAnthropicMessagesUsageNonStreamAndStreamOnBothPaths(t *testing.T) {
	srv, _ := startMock(t)
	for _, base := range []string{srv.URL, srv.URL + "/anthropic"} {
		t.Run(base, func(t *testing.T) {
			c := anthropicClient(base, aoption.WithHeader("x-mock-output-tokens", "12"), aoption.WithHeader("x-mock-cached-tokens", "4"))
			params := anthropic.MessageNewParams{
				Model:     anthropic.ModelClaudeSonnet5_5,
				MaxTokens: 10, // caps the 12 requested tokens
				System:    []anthropic.TextBlockParam{{Text: "be brief"}},
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
			}
			// system 4+2, user 4+5 = 15 input tokens; 4 of them reported as cache reads.
			msg, err := c.Messages.New(context.Background(), params)
			require.NoError(t, err)
			require.Equal(t, int64(11), msg.Usage.InputTokens)
			require.Equal(t, int64(4), msg.Usage.CacheReadInputTokens)
			require.Equal(t, int64(10), msg.Usage.OutputTokens)
			require.Equal(t, anthropic.StopReasonMaxTokens, msg.StopReason)
			require.Len(t, strings.Fields(msg.Content[0].Text), 10)

			stream := c.Messages.NewStreaming(context.Background(), params)
			acc := anthropic.Message{}
			var startOutput int64 = -1
			for stream.Next() {
				ev := stream.Current()
				if ev.Type == "message_start" {
					startOutput = ev.Message.Usage.OutputTokens
				}
				require.NoError(t, acc.Accumulate(ev))
			}
			require.NoError(t, stream.Err())
			require.Equal(t, int64(1), startOutput, "message_start reports output_tokens 1")
			require.Equal(t, int64(11), acc.Usage.InputTokens)
			require.Equal(t, int64(4), acc.Usage.CacheReadInputTokens)
			require.Equal(t, int64(10), acc.Usage.OutputTokens)
			require.Len(t, strings.Fields(acc.Content[0].Text), 10)
		})
	}
}

func TestMockStatusSurfacesAsTypedSDKErrors(t *testing.T) {
	srv, _ := startMock(t)
	oc := openAIClient(srv, option.WithHeader("x-mock-status", "429"))
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var oerr *openai.Error
	require.True(t, errors.As(err, &oerr), "got %v", err)
	require.Equal(t, 429, oerr.StatusCode)
	require.Equal(t, "rate_limit_exceeded", oerr.Type)

	ac := anthropicClient(srv.URL, aoption.WithHeader("x-mock-status", "529"))
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: anthropic.ModelClaudeSonnet5_5, MaxTokens: 5,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	var aerr *anthropic.Error
	require.True(t, errors.As(err, &aerr), "got %v", err)
	require.Equal(t, 529, aerr.StatusCode)
	require.Contains(t, aerr.RawJSON(), "overloaded_error")
}
