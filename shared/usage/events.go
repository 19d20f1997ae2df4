package usage

import (
	"bytes"
	"slices"

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
func eventType(typ jsonx.Value, name []byte) []byte {
	if typ.Kind == jsonx.String {
		return text(typ)
	}
	return name
}

// pick reads the first member named names[i] of obj into out[i] (the zero
// Value when absent), in one pass over obj however many names it looks for.
func pick(obj jsonx.Value, names []string, out []jsonx.Value) {
	c := obj.Cursor()
	if !c.Enter(jsonx.Object) {
		return
	}
	for c.Next() {
		i := slices.Index(names, c.Name())
		if i < 0 || i >= len(out) || out[i].Exists() {
			c.Skip()
			continue
		}
		out[i] = c.Value()
	}
}

// openAIEvent reads a chat.completion.chunk or text_completion chunk. The
// usage chunk (choices: [], sent when stream_options.include_usage is true)
// replaces any earlier usage, since servers that report usage on every chunk
// report it cumulatively. Every "usage" and "choices" member counts, in order.
func (s *Stream) openAIEvent(data []byte) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		s.completed = true
		return
	}
	// One walk over the chunk, which also checks its grammar: chunks arrive
	// hundreds of times a second and are mostly the nested delta, which a
	// lookup per level would rescan, and a Parse first read every byte
	// twice. What the walk counts is kept only if the chunk was valid JSON.
	// The same walk tells the usage-only chunk: the first choices member an
	// empty array, the first usage member an object.
	usage, haveUsage, delta := s.usage, s.haveUsage, s.delta
	var sawUsage, sawChoices, usageObject, noChoices bool
	c := jsonx.Strict(data)
	if !c.Enter(jsonx.Object) {
		return
	}
	for c.Next() {
		switch c.Name() {
		case "usage":
			v := c.Value()
			if !sawUsage {
				sawUsage, usageObject = true, v.Kind == jsonx.Object
			}
			if u, ok := openAIUsage(v); ok {
				s.usage, s.haveUsage = u, true
			}
		case "choices":
			obj, ok := c.EnterItems()
			n := 0
			for ok && c.NextItem(obj) {
				n++
				s.openAIChoice(&c)
			}
			if !sawChoices {
				sawChoices, noChoices = true, ok && !obj && n == 0
			}
		default:
			c.Skip()
		}
	}
	if !c.Valid() {
		s.usage, s.haveUsage, s.delta = usage, haveUsage, delta // a garbled event counts nothing
		return
	}
	s.usageOnly = usageObject && noChoices
}

// openAIChoice counts one choice: text for completions, the delta's text,
// reasoning and tool-call members for chat.
func (s *Stream) openAIChoice(c *jsonx.StrictCursor) {
	if !c.Enter(jsonx.Object) {
		return
	}
	for c.Next() {
		switch c.Name() {
		case "text":
			if s.api == OpenAICompletions {
				s.countString(c.Value())
			} else {
				c.Skip()
			}
		case "delta":
			if s.api != OpenAIChat {
				c.Skip()
			} else if c.Enter(jsonx.Object) {
				for c.Next() {
					s.openAIDeltaMember(c)
				}
			}
		default:
			c.Skip()
		}
	}
}

// openAIDeltaMember counts one member of a chat delta and consumes it.
func (s *Stream) openAIDeltaMember(c *jsonx.StrictCursor) {
	switch c.Name() {
	case "content", "refusal", "reasoning_content", "reasoning":
		v := c.Value()
		if v.Kind == jsonx.String && !c.Escaped() {
			s.countText(v.Raw[1 : len(v.Raw)-1]) // the walk found no escape: the text as it stands
		} else {
			s.countString(v)
		}
	case "tool_calls":
		obj, ok := c.EnterItems()
		for ok && c.NextItem(obj) {
			s.countFunction(c.Value().Get("function"))
		}
	case "function_call":
		s.countFunction(c.Value())
	case "audio":
		s.countString(c.Value().Get("transcript"))
	default:
		c.Skip()
	}
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
// Completed, so the hold ends as a failed answer's does.
// Every "*.delta" event with a string delta counts (output text, refusal,
// reasoning, function and custom tool arguments, transcripts), except audio
// deltas, which are base64 audio rather than text.
func (s *Stream) responsesEvent(name, data []byte) {
	root, ok := object(data)
	if !ok {
		return
	}
	var m [3]jsonx.Value
	pick(root, responsesMembers, m[:])
	typ, delta, response := m[0], m[1], m[2]
	switch t := eventType(typ, name); string(t) {
	case "response.completed", "response.incomplete":
		s.responsesUsage(response)
		s.completed = true
	case "response.failed":
		s.responsesUsage(response)
	default:
		if bytes.HasSuffix(t, []byte(".delta")) && !bytes.HasSuffix(t, []byte("audio.delta")) {
			s.countString(delta)
		}
	}
}

// responsesMembers are the members a Responses event is read from.
var responsesMembers = []string{"type", "delta", "response"}

func (s *Stream) responsesUsage(response jsonx.Value) {
	if u, ok := responsesUsage(response.Get("usage")); ok {
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
	var m [5]jsonx.Value
	pick(root, anthropicMembers, m[:])
	typ, message, usage, block, delta := m[0], m[1], m[2], m[3], m[4]
	switch string(eventType(typ, name)) {
	case "message_start":
		s.anthropic.merge(message.Get("usage"))
	case "message_delta":
		s.anthropic.merge(usage)
	case "content_block_start":
		s.countAnthropicText(block)
	case "content_block_delta":
		s.countAnthropicText(delta)
	case "message_stop":
		s.completed = true
	}
}

// anthropicMembers are the members an Anthropic event is read from.
var anthropicMembers = []string{"type", "message", "usage", "content_block", "delta"}

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
