package mockllm

import "encoding/json"

func completionUsage(g generation) map[string]any {
	return map[string]any{
		"prompt_tokens":         g.input,
		"completion_tokens":     g.output,
		"total_tokens":          g.input + g.output,
		"prompt_tokens_details": map[string]any{"cached_tokens": g.cached, "audio_tokens": 0},
	}
}

func textChoice(text string, finish any) []any {
	return []any{map[string]any{"text": text, "index": 0, "logprobs": nil, "finish_reason": finish}}
}

func textCompletion(g generation) map[string]any {
	return map[string]any{
		"id":      "cmpl-mock" + g.id,
		"object":  "text_completion",
		"created": g.created,
		"model":   g.model,
		"choices": textChoice(answerText(g.output), g.finishReason()),
		"usage":   completionUsage(g),
	}
}

func textChunk(g generation, choices []any, usage any) []byte {
	b, _ := json.Marshal(map[string]any{
		"id":      "cmpl-mock" + g.id,
		"object":  "text_completion",
		"created": g.created,
		"model":   g.model,
		"choices": choices,
		"usage":   usage,
	})
	return b
}

// streamCompletions follows the same usage rules as chat: a usage chunk with empty choices only
// when stream_options.include_usage is set.
func streamCompletions(g generation, st *sse) int64 {
	sent := st.chunks(g, func(from, n int64) {
		st.delta("", textChunk(g, textChoice(deltaText(from, n), nil), nil))
	})
	st.send("", textChunk(g, textChoice("", g.finishReason()), nil))
	if g.includeUsage {
		st.send("", textChunk(g, []any{}, completionUsage(g)))
	}
	st.send("", []byte("[DONE]"))
	return sent
}
