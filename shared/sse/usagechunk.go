package sse

import "github.com/tokenbudget/tokenbudget/shared/jsonx"

// IsOpenAIUsageOnlyChunk reports the chunk OpenAI streams add when
// stream_options.include_usage is true: an object with an empty choices
// array and a usage object. Content chunks (choices non-empty, usage null)
// and [DONE] are never selected.
func IsOpenAIUsageOnlyChunk(data []byte) bool {
	v := jsonx.Parse(data)
	if v.Kind != jsonx.Object {
		return false
	}
	choices := v.Get("choices")
	return choices.Kind == jsonx.Array && choices.Len() == 0 && v.Get("usage").Kind == jsonx.Object
}
