package mockllm

import "encoding/json"

func responsesUsage(g generation) map[string]any {
	return map[string]any{
		"input_tokens":          g.input,
		"input_tokens_details":  map[string]any{"cached_tokens": g.cached},
		"output_tokens":         g.output,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          g.input + g.output,
	}
}

func responseMessage(g generation, status, text string, content bool) map[string]any {
	parts := []any{}
	if content {
		parts = append(parts, outputText(text))
	}
	return map[string]any{
		"type": "message", "id": "msg_mock" + g.id, "status": status, "role": "assistant", "content": parts,
	}
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// response is the Responses API object. "completed" carries the output and usage; any other status
// (the in-progress snapshot of response.created) has neither, as the real stream does.
func response(g generation, status string) map[string]any {
	output, usage := []any{}, any(nil)
	if status == "completed" {
		output = append(output, responseMessage(g, "completed", answerText(g.output), true))
		usage = responsesUsage(g)
	}
	var maxOut any
	if g.ceiling > 0 {
		maxOut = g.ceiling
	}
	return map[string]any{
		"id":                   "resp_mock" + g.id,
		"object":               "response",
		"created_at":           g.created,
		"status":               status,
		"error":                nil,
		"incomplete_details":   nil,
		"instructions":         nil,
		"max_output_tokens":    maxOut,
		"model":                g.model,
		"output":               output,
		"parallel_tool_calls":  true,
		"previous_response_id": nil,
		"reasoning":            map[string]any{"effort": nil, "summary": nil},
		"store":                true,
		"temperature":          1.0,
		"text":                 map[string]any{"format": map[string]any{"type": "text"}},
		"tool_choice":          "auto",
		"tools":                []any{},
		"top_p":                1.0,
		"truncation":           "disabled",
		"usage":                usage,
		"metadata":             map[string]any{},
	}
}

// compaction is the /v1/responses/compact answer: the compacted item carries the generated text.
func compaction(g generation) map[string]any {
	return map[string]any{
		"id":         "resp_mock" + g.id,
		"object":     "response.compaction",
		"created_at": g.created,
		"output": []any{map[string]any{
			"type": "compaction", "id": "cmp_mock" + g.id, "encrypted_content": answerText(g.output),
		}},
		"usage": responsesUsage(g),
	}
}

// streamResponses sends the Responses event sequence; only response.completed carries usage.
func streamResponses(g generation, st *sse) int64 {
	seq := 0
	event := func(name string, fields map[string]any) []byte {
		fields["type"] = name
		fields["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(fields)
		return b
	}
	itemID := "msg_mock" + g.id
	at := func(m map[string]any) map[string]any {
		m["item_id"], m["output_index"], m["content_index"] = itemID, 0, 0
		return m
	}
	st.send("response.created", event("response.created", map[string]any{"response": response(g, "in_progress")}))
	st.send("response.in_progress", event("response.in_progress", map[string]any{"response": response(g, "in_progress")}))
	st.send("response.output_item.added", event("response.output_item.added", map[string]any{
		"output_index": 0, "item": responseMessage(g, "in_progress", "", false),
	}))
	st.send("response.content_part.added", event("response.content_part.added", at(map[string]any{"part": outputText("")})))
	sent := st.chunks(g, func(from, n int64) {
		st.delta("response.output_text.delta", event("response.output_text.delta",
			at(map[string]any{"delta": deltaText(from, n), "logprobs": []any{}})))
	})
	text := answerText(g.output)
	st.send("response.output_text.done", event("response.output_text.done", at(map[string]any{"text": text, "logprobs": []any{}})))
	st.send("response.content_part.done", event("response.content_part.done", at(map[string]any{"part": outputText(text)})))
	st.send("response.output_item.done", event("response.output_item.done", map[string]any{
		"output_index": 0, "item": responseMessage(g, "completed", text, true),
	}))
	st.send("response.completed", event("response.completed", map[string]any{"response": response(g, "completed")}))
	return sent
}
