package mockllm

import "encoding/json"

// anthropicUsage reports cache reads and writes apart from input_tokens, as Anthropic does.
func anthropicUsage(g generation, output int64) map[string]any {
	return map[string]any{
		"input_tokens":                g.input - g.cached - g.cacheWrite,
		"output_tokens":               output,
		"cache_read_input_tokens":     g.cached,
		"cache_creation_input_tokens": g.cacheWrite,
		"service_tier":                "standard",
	}
}

func (g generation) stopReason() string {
	if g.capped {
		return "max_tokens"
	}
	return "end_turn"
}

func anthropicMessage(g generation) map[string]any {
	return map[string]any{
		"id":            "msg_mock" + g.id,
		"type":          "message",
		"role":          "assistant",
		"model":         g.model,
		"content":       []any{map[string]any{"type": "text", "text": answerText(g.output)}},
		"stop_reason":   g.stopReason(),
		"stop_sequence": nil,
		"usage":         anthropicUsage(g, g.output),
	}
}

// streamAnthropic sends message_start (input usage, output_tokens 1), ping, one text block, and
// message_delta whose usage.output_tokens is the cumulative total, then message_stop.
func streamAnthropic(g generation, st *sse) int64 {
	ev := func(name string, fields map[string]any) {
		fields["type"] = name
		b, _ := json.Marshal(fields)
		st.send(name, b)
	}
	start := anthropicMessage(g)
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = anthropicUsage(g, 1)
	ev("message_start", map[string]any{"message": start})
	ev("ping", map[string]any{})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	sent := st.chunks(g, func(from, n int64) {
		b, _ := json.Marshal(map[string]any{
			"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": deltaText(from, n)},
		})
		st.delta("content_block_delta", b)
	})
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": g.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": g.output},
	})
	ev("message_stop", map[string]any{})
	return sent
}
