package usage

import (
	"bytes"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// handle reads one dispatched event. name is the event: field (empty when
// absent), data the joined data: lines. An event whose data is not valid JSON
// is ignored whole, so a garbled event can neither report usage nor count.
func (s *Stream) handle(name, data []byte) {
	switch s.api {
	case OpenAIChat, OpenAICompletions:
		s.openAIEvent(data)
	case OpenAIResponses:
		s.responsesEvent(name, data)
	case AnthropicMessages:
		s.anthropicEvent(name, data)
	}
}

// object parses data as one JSON object, or reports false. Parse validates
// the whole event once; every later lookup only skips over trusted bytes.
func object(data []byte) (jsonx.Value, bool) {
	root := jsonx.Parse(data)
	return root, root.Kind == jsonx.Object
}

// eventType is the JSON "type" member, which the Responses and Anthropic
// APIs repeat from the event: line; the event: line is the fallback.
func eventType(root jsonx.Value, name []byte) []byte {
	if t := root.Get("type"); t.Kind == jsonx.String {
		return text(t)
	}
	return name
}

// openAIEvent reads a chat.completion.chunk or text_completion chunk. The
// usage chunk (choices: [], sent when stream_options.include_usage is true)
// replaces any earlier usage, since servers that report usage on every chunk
// report it cumulatively.
func (s *Stream) openAIEvent(data []byte) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		s.completed = true
		return
	}
	root, ok := object(data)
	if !ok {
		return
	}
	// One pass per nesting level: chunks arrive hundreds of times a second,
	// and a Get per member would rescan the object for each.
	root.Members(func(key string, v jsonx.Value) bool {
		switch key {
		case "usage":
			if u, ok := openAIUsage(v); ok {
				s.usage, s.haveUsage = u, true
			}
		case "choices":
			v.ForEach(func(_ []byte, choice jsonx.Value) bool {
				s.openAIChoice(choice)
				return true
			})
		}
		return true
	})
}

// openAIChoice counts one choice: text for completions, the delta's text,
// reasoning and tool-call members for chat.
func (s *Stream) openAIChoice(choice jsonx.Value) {
	choice.Members(func(key string, v jsonx.Value) bool {
		switch key {
		case "text":
			if s.api == OpenAICompletions {
				s.countString(v)
			}
		case "delta":
			if s.api == OpenAIChat {
				v.Members(s.openAIDeltaMember)
			}
		}
		return true
	})
}

func (s *Stream) openAIDeltaMember(key string, v jsonx.Value) bool {
	switch key {
	case "content", "refusal", "reasoning_content", "reasoning":
		s.countString(v)
	case "tool_calls":
		v.ForEach(func(_ []byte, call jsonx.Value) bool {
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

func (s *Stream) countFunction(fn jsonx.Value) {
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
func (s *Stream) responsesEvent(name, data []byte) {
	root, ok := object(data)
	if !ok {
		return
	}
	switch t := eventType(root, name); string(t) {
	case "response.completed", "response.incomplete":
		s.responsesUsage(root)
		s.completed = true
	case "response.failed":
		s.responsesUsage(root)
	default:
		if bytes.HasSuffix(t, []byte(".delta")) && !bytes.HasSuffix(t, []byte("audio.delta")) {
			s.countString(root.Get("delta"))
		}
	}
}

func (s *Stream) responsesUsage(root jsonx.Value) {
	if u, ok := responsesUsage(root.Path("response", "usage")); ok {
		s.usage, s.haveUsage = u, true
	}
}

// anthropicEvent reads an Anthropic Messages event. message_start carries
// the input and cache counts (and an initial output count), message_delta the
// cumulative output count and possibly updated input and cache counts; their
// merge is the final usage. message_stop is the normal end; an error event is
// a failure. Text, thinking and tool-input JSON deltas count; signatures and
// citations do not.
func (s *Stream) anthropicEvent(name, data []byte) {
	root, ok := object(data)
	if !ok {
		return
	}
	switch string(eventType(root, name)) {
	case "message_start":
		s.anthropic.merge(root.Path("message", "usage"))
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

func (s *Stream) countAnthropicText(block jsonx.Value) {
	block.Members(func(key string, v jsonx.Value) bool {
		switch key {
		case "text", "thinking", "partial_json":
			s.countString(v)
		}
		return true
	})
}

// countString counts v when it is a JSON string.
func (s *Stream) countString(v jsonx.Value) {
	if v.Kind == jsonx.String {
		s.countText(text(v))
	}
}

// text is the content of a String value as the counters read it: the bytes
// between the quotes as they are when nothing is escaped (the common case,
// no scan beyond finding that out and no copy), decoded otherwise.
func text(v jsonx.Value) []byte {
	if v.Kind != jsonx.String || len(v.Raw) < 2 {
		return nil
	}
	c := v.Raw[1 : len(v.Raw)-1]
	if bytes.IndexByte(c, '\\') < 0 {
		return c
	}
	return v.StrBytes()
}
