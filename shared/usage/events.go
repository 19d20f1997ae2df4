package usage

import (
	"strings"

	"github.com/tidwall/gjson"
)

// handle reads one dispatched event. name is the event: field (empty when
// absent), data the joined data: lines. An event whose data is not valid JSON
// is ignored whole, so a garbled event can neither report usage nor count.
func (s *Stream) handle(name, data string) {
	switch s.api {
	case OpenAIChat, OpenAICompletions:
		s.openAIEvent(data)
	case OpenAIResponses:
		s.responsesEvent(name, data)
	case AnthropicMessages:
		s.anthropicEvent(name, data)
	}
}

// object parses data as one JSON object, or reports false.
func object(data string) (gjson.Result, bool) {
	if !gjson.Valid(data) {
		return gjson.Result{}, false
	}
	root := gjson.Parse(data)
	return root, root.IsObject()
}

// eventType is the JSON "type" member, which the Responses and Anthropic
// APIs repeat from the event: line; the event: line is the fallback.
func eventType(root gjson.Result, name string) string {
	if t := root.Get("type"); t.Type == gjson.String {
		return t.Str
	}
	return name
}

// openAIEvent reads a chat.completion.chunk or text_completion chunk. The
// usage chunk (choices: [], sent when stream_options.include_usage is true)
// replaces any earlier usage, since servers that report usage on every chunk
// report it cumulatively.
func (s *Stream) openAIEvent(data string) {
	if strings.TrimSpace(data) == "[DONE]" {
		s.completed = true
		return
	}
	root, ok := object(data)
	if !ok {
		return
	}
	// One pass per nesting level: chunks arrive hundreds of times a second,
	// and a Get per member would rescan the object for each.
	root.ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "usage":
			if u, ok := openAIUsage(v); ok {
				s.usage, s.haveUsage = u, true
			}
		case "choices":
			v.ForEach(func(_, choice gjson.Result) bool {
				s.openAIChoice(choice)
				return true
			})
		}
		return true
	})
}

// openAIChoice counts one choice: text for completions, the delta's text,
// reasoning and tool-call members for chat.
func (s *Stream) openAIChoice(choice gjson.Result) {
	choice.ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "text":
			if s.api == OpenAICompletions {
				s.countString(v)
			}
		case "delta":
			if s.api == OpenAIChat {
				v.ForEach(s.openAIDeltaMember)
			}
		}
		return true
	})
}

func (s *Stream) openAIDeltaMember(key, v gjson.Result) bool {
	switch key.Str {
	case "content", "refusal", "reasoning_content", "reasoning":
		s.countString(v)
	case "tool_calls":
		v.ForEach(func(_, call gjson.Result) bool {
			s.countFunction(call.Get("function"))
			return true
		})
	case "function_call":
		s.countFunction(v)
	case "audio":
		s.countString(v.Get("transcript"))
	}
	return true
}

func (s *Stream) countFunction(fn gjson.Result) {
	s.countString(fn.Get("name"))
	s.countString(fn.Get("arguments"))
}

// responsesEvent reads a Responses API event.
//
// response.completed and response.incomplete (stopped by max_output_tokens or
// a content filter, after the backend generated and billed its tokens) are
// normal ends that settle against response.usage. response.failed and error
// are failures: their usage, if any, is recorded but the stream is not
// Completed, so the hold is released as the seed rules for a failure.
// Every "*.delta" event with a string delta counts (output text, refusal,
// reasoning, function and custom tool arguments, transcripts), except audio
// deltas, which are base64 audio rather than text.
func (s *Stream) responsesEvent(name, data string) {
	root, ok := object(data)
	if !ok {
		return
	}
	switch t := eventType(root, name); t {
	case "response.completed", "response.incomplete":
		s.responsesUsage(root)
		s.completed = true
	case "response.failed":
		s.responsesUsage(root)
	default:
		if strings.HasSuffix(t, ".delta") && !strings.HasSuffix(t, "audio.delta") {
			s.countString(root.Get("delta"))
		}
	}
}

func (s *Stream) responsesUsage(root gjson.Result) {
	if u, ok := responsesUsage(root.Get("response.usage")); ok {
		s.usage, s.haveUsage = u, true
	}
}

// anthropicEvent reads an Anthropic Messages event. message_start carries
// the input and cache counts (and an initial output count), message_delta the
// cumulative output count and possibly updated input and cache counts; their
// merge is the final usage. message_stop is the normal end; an error event is
// a failure. Text, thinking and tool-input JSON deltas count; signatures and
// citations do not.
func (s *Stream) anthropicEvent(name, data string) {
	root, ok := object(data)
	if !ok {
		return
	}
	switch eventType(root, name) {
	case "message_start":
		s.anthropic.merge(root.Get("message.usage"))
	case "message_delta":
		s.anthropic.merge(root.Get("usage"))
	case "content_block_start":
		s.countAnthropicText(root.Get("content_block"))
	case "content_block_delta":
		s.countAnthropicText(root.Get("delta"))
	case "message_stop":
		s.completed = true
	}
}

func (s *Stream) countAnthropicText(block gjson.Result) {
	block.ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "text", "thinking", "partial_json":
			s.countString(v)
		}
		return true
	})
}

// countString counts v when it is a JSON string.
func (s *Stream) countString(v gjson.Result) {
	if v.Type == gjson.String {
		s.countText(v.Str)
	}
}
