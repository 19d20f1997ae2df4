package mockllm

import "encoding/json"

// chatUsage is the Chat Completions usage object; cached tokens are a subset of prompt_tokens.
func chatUsage(g generation) map[string]any {
	return map[string]any{
		"prompt_tokens":         g.input,
		"completion_tokens":     g.output,
		"total_tokens":          g.input + g.output,
		"prompt_tokens_details": map[string]any{"cached_tokens": g.cached, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{
			"reasoning_tokens": 0, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
		},
	}
}

// finishReason says "length" when the request's ceiling cut the answer, as the real API does.
func (g generation) finishReason() string {
	if g.capped {
		return "length"
	}
	return "stop"
}

func chatCompletion(g generation) map[string]any {
	return map[string]any{
		"id":                 "chatcmpl-mock" + g.id,
		"object":             "chat.completion",
		"created":            g.created,
		"model":              g.model,
		"system_fingerprint": "fp_mock",
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": answerText(g.output), "refusal": nil},
			"logprobs":      nil,
			"finish_reason": g.finishReason(),
		}},
		"usage": chatUsage(g),
	}
}

// chatChunk is one chat.completion.chunk; usage is null on every chunk but the usage chunk.
func chatChunk(g generation, choices []any, usage any) []byte {
	b, _ := json.Marshal(map[string]any{
		"id":                 "chatcmpl-mock" + g.id,
		"object":             "chat.completion.chunk",
		"created":            g.created,
		"model":              g.model,
		"system_fingerprint": "fp_mock",
		"choices":            choices,
		"usage":              usage,
	})
	return b
}

func chatChoice(delta map[string]any, finish any) []any {
	return []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
}

// streamChat sends a role chunk, one chunk per delta, a finish chunk, the usage chunk (only with
// stream_options.include_usage) and [DONE].
func streamChat(g generation, st *sse) int64 {
	st.send("", chatChunk(g, chatChoice(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil), nil))
	sent := st.chunks(g, func(from, n int64) {
		st.delta("", chatChunk(g, chatChoice(map[string]any{"content": deltaText(from, n)}, nil), nil))
	})
	st.send("", chatChunk(g, chatChoice(map[string]any{}, g.finishReason()), nil))
	if g.includeUsage {
		st.send("", chatChunk(g, []any{}, chatUsage(g)))
	}
	st.send("", []byte("[DONE]"))
	return sent
}
