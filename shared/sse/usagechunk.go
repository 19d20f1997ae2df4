package sse

import "github.com/tokenbudget/tokenbudget/shared/jsonx"

// IsOpenAIUsageOnlyChunk reports the chunk OpenAI streams add when
// stream_options.include_usage is true: an object with an empty choices
// array and a usage object. Content chunks (choices non-empty, usage null)
// and [DONE] are never selected.
func IsOpenAIUsageOnlyChunk(data []byte) bool {
	if !mayHoldUsageObject(data) {
		return false // every content chunk: "usage":null or no usage at all
	}
	v := jsonx.Parse(data)
	if v.Kind != jsonx.Object {
		return false
	}
	choices := v.Get("choices")
	return choices.Kind == jsonx.Array && choices.Len() == 0 && v.Get("usage").Kind == jsonx.Object
}

// mayHoldUsageObject is a byte scan that rules out, without parsing, every
// chunk whose "usage" members are all null or absent; only a chunk where a
// "usage" key is followed by an object can be the usage chunk.
func mayHoldUsageObject(data []byte) bool {
	const key = `"usage"`
	for i := 0; i+len(key) <= len(data); i++ {
		if data[i] != '"' || string(data[i:i+len(key)]) != key {
			continue
		}
		j := i + len(key)
		for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j++
		}
		if j >= len(data) || data[j] != ':' {
			continue
		}
		j++
		for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
			j++
		}
		if j < len(data) && data[j] == '{' {
			return true
		}
	}
	return false
}
