package usage

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// gjsonOpenAIEvent is the chunk reader as it was written on gjson, one
// ForEach per level; the cursor walk must read every chunk the same way.
func gjsonOpenAIEvent(api API, data []byte) streamResult {
	var r streamResult
	if strings.TrimSpace(string(data)) == "[DONE]" {
		r.Completed = true
		return r
	}
	if !gjson.ValidBytes(data) {
		return r
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return r
	}
	str := func(v gjson.Result) {
		if v.Type == gjson.String {
			r.Delta += int64(len(v.Str))
		}
	}
	fn := func(v gjson.Result) {
		str(v.Get("name"))
		str(v.Get("arguments"))
	}
	root.ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "usage":
			if u, ok := openAIUsage(jsonx.Parse([]byte(v.Raw))); ok {
				r.Usage, r.HaveUsage = u, true
			}
		case "choices":
			v.ForEach(func(_, choice gjson.Result) bool {
				choice.ForEach(func(key, v gjson.Result) bool {
					switch {
					case key.Str == "text" && api == OpenAICompletions:
						str(v)
					case key.Str == "delta" && api == OpenAIChat:
						v.ForEach(func(key, v gjson.Result) bool {
							switch key.Str {
							case "content", "refusal", "reasoning_content", "reasoning":
								str(v)
							case "tool_calls":
								v.ForEach(func(_, call gjson.Result) bool {
									fn(call.Get("function"))
									return true
								})
							case "function_call":
								fn(v)
							case "audio":
								str(v.Get("transcript"))
							}
							return true
						})
					}
					return true
				})
				return true
			})
		}
		return true
	})
	return r
}

func walkOpenAIEvent(api API, data []byte) streamResult {
	s := NewStream(api, countBytes)
	s.openAIEvent(data)
	u, ok := s.Usage()
	return streamResult{Usage: u, HaveUsage: ok, Completed: s.Completed(), Delta: s.DeltaTokens()}
}

var walkSeeds = []string{
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" the"}}]}`,
	`{"choices":[{"delta":{"role":"assistant","content":"","refusal":null}},{"delta":{"reasoning_content":"hm","reasoning":"ok"}}]}`,
	`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"a\":1}"}}]}}]}`,
	`{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"},"audio":{"transcript":"hi","data":"AAAA"}}}]}`,
	`{"choices":[{"text":"\n\nThis is","index":0}],"usage":null}`,
	`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}}`,
	`{"choices":{"a":{"delta":{"content":"x"}}},"usage":{"prompt_tokens":1,"completion_tokens":1},"usage":{"prompt_tokens":2,"completion_tokens":2}}`,
	`{"choices":[{"delta":{"tool_calls":{"k":{"function":{"name":"n"}}}}}, "s", 1, [{"delta":{"content":"no"}}]]}`,
	`{"ch\u006fices":[{"d\u0065lta":{"c\u006fntent":"\u00e9\n\"q\\"}}]}`,
	` { "choices" : [ { "delta" : { "content" : "a b" , "refusal" : "c" } } ] } `,
	`{"choices":[{"delta":{"content":"\ud800\udc00 \ud800 x"}}]}`,
	`{"choices":[{"delta":{"content":"a\\"}}],"x":[[[{"}":"]"}]]],"y":-1.5e3,"z":[true,false,null]}`,
	` [DONE] `,
	`{"choices":[{"delta":{"content":"x"}}]`,
}

func TestChatChunkWalkReadsLikeALookupPerLevel(t *testing.T) {
	for _, seed := range walkSeeds {
		for _, api := range []API{OpenAIChat, OpenAICompletions} {
			require.Equal(t, gjsonOpenAIEvent(api, []byte(seed)), walkOpenAIEvent(api, []byte(seed)), "%s %s", api, seed)
		}
	}
}

// gjsonReadsItAlike reports whether the gjson readers are an oracle for
// data. They are not past jsonx.MaxDepth (gjson has no depth limit; jsonx
// rejects deeper documents by design), nor on invalid UTF-8: gjson keeps an
// invalid byte of an escaped string as it is, jsonx decodes it to U+FFFD as
// encoding/json does (TestAnInvalidByteInAnEscapedDeltaCountsAsAReplacementCharacter).
func gjsonReadsItAlike(data []byte) bool {
	return bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) <= jsonx.MaxDepth && utf8.Valid(data)
}

func FuzzChatChunkWalkReadsLikeALookupPerLevel(f *testing.F) {
	for _, seed := range walkSeeds {
		f.Add(true, []byte(seed))
	}
	f.Fuzz(func(t *testing.T, chat bool, data []byte) {
		api := OpenAICompletions
		if chat {
			api = OpenAIChat
		}
		if !gjsonReadsItAlike(data) {
			return
		}
		require.Equal(t, gjsonOpenAIEvent(api, data), walkOpenAIEvent(api, data))
	})
}

// gjsonNamedEvent is the Responses and Anthropic event reader as it was
// written on gjson, one Get per member; pick must read the same members.
func gjsonNamedEvent(api API, name string, data []byte) streamResult {
	var r streamResult
	if !gjson.ValidBytes(data) {
		return r
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return r
	}
	str := func(v gjson.Result) {
		if v.Type == gjson.String {
			r.Delta += int64(len(v.Str))
		}
	}
	conv := func(v gjson.Result) jsonx.Value { return jsonx.Parse([]byte(v.Raw)) }
	t := name
	if v := root.Get("type"); v.Type == gjson.String {
		t = v.Str
	}
	switch api {
	case OpenAIResponses:
		switch t {
		case "response.completed", "response.incomplete", "response.failed":
			if u, ok := responsesUsage(conv(root.Get("response.usage"))); ok {
				r.Usage, r.HaveUsage = u, true
			}
			r.Completed = t != "response.failed"
		default:
			if strings.HasSuffix(t, ".delta") && !strings.HasSuffix(t, "audio.delta") {
				str(root.Get("delta"))
			}
		}
	case AnthropicMessages:
		var a anthropicUsage
		text := func(block gjson.Result) {
			block.ForEach(func(key, v gjson.Result) bool {
				switch key.Str {
				case "text", "thinking", "partial_json":
					str(v)
				}
				return true
			})
		}
		switch t {
		case "message_start":
			a.merge(conv(root.Get("message.usage")))
		case "message_delta":
			a.merge(conv(root.Get("usage")))
		case "content_block_start":
			text(root.Get("content_block"))
		case "content_block_delta":
			text(root.Get("delta"))
		case "message_stop":
			r.Completed = true
		}
		r.Usage, r.HaveUsage = a.usage()
	}
	return r
}

func walkNamedEvent(api API, name string, data []byte) streamResult {
	s := NewStream(api, countBytes)
	s.handle([]byte(name), data)
	u, ok := s.Usage()
	return streamResult{Usage: u, HaveUsage: ok, Completed: s.Completed(), Delta: s.DeltaTokens()}
}

var namedSeeds = []struct {
	api        API
	name, data string
}{
	{OpenAIResponses, "", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":" the"}`},
	{OpenAIResponses, "response.function_call_arguments.delta", `{"delta":"{\"a\":","type":7}`},
	{OpenAIResponses, "", `{"type":"response.output_audio.delta","delta":"AAAA"}`},
	{OpenAIResponses, "", `{"type":"response.completed","response":{"usage":{"input_tokens":3,"output_tokens":4}},"response":{}}`},
	{OpenAIResponses, "", `{"type":"response.failed","response":{"usage":{"input_tokens":3,"output_tokens":4,"input_tokens_details":{"cached_tokens":1}}}}`},
	{OpenAIResponses, "response.incomplete", `{"t\u0079pe":"response.incomplete","response":{"usage":{"input_tokens":"3","output_tokens":4.0}}}`},
	{AnthropicMessages, "", `{"type":"message_start","message":{"usage":{"input_tokens":25,"output_tokens":1,"cache_read_input_tokens":3}}}`},
	{AnthropicMessages, "message_delta", `{"delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`},
	{AnthropicMessages, "", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" token"},"delta":{"text":"no"}}`},
	{AnthropicMessages, "", `{"type":"content_block_start","content_block":{"type":"thinking","thinking":"hm","signature":"x"}}`},
	{AnthropicMessages, "message_stop", `{"type":"message_stop"}`},
	{AnthropicMessages, "message_stop", `{"type":null}`},
}

func TestNamedEventPickReadsLikeAGetPerMember(t *testing.T) {
	for _, seed := range namedSeeds {
		require.Equal(t, gjsonNamedEvent(seed.api, seed.name, []byte(seed.data)), walkNamedEvent(seed.api, seed.name, []byte(seed.data)), "%s %s", seed.name, seed.data)
	}
}

// An invalid UTF-8 byte in a string that also holds an escape is decoded to
// U+FFFD, as encoding/json decodes it, so such a delta never counts less than
// its bytes; without an escape the bytes are counted as they are.
func TestAnInvalidByteInAnEscapedDeltaCountsAsAReplacementCharacter(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]int64{
		"{\"type\":\"x.delta\",\"delta\":\"\xff\\n\"}": 4, // U+FFFD (3 bytes) and a newline
		"{\"type\":\"x.delta\",\"delta\":\"\xffa\"}":   2, // nothing escaped: the raw bytes
	} {
		require.Equal(t, want, walkNamedEvent(OpenAIResponses, "", []byte(data)).Delta, "%q", data)
	}
}

func FuzzNamedEventPickReadsLikeAGetPerMember(f *testing.F) {
	for _, seed := range namedSeeds {
		f.Add(seed.api == AnthropicMessages, seed.name, []byte(seed.data))
	}
	f.Fuzz(func(t *testing.T, anthropic bool, name string, data []byte) {
		api := OpenAIResponses
		if anthropic {
			api = AnthropicMessages
		}
		if !gjsonReadsItAlike(data) {
			return
		}
		require.Equal(t, gjsonNamedEvent(api, name, data), walkNamedEvent(api, name, data))
	})
}
