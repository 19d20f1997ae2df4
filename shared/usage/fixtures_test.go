package usage

// Stream fixtures modelled on the real APIs' wire output (ids shortened).
// Tests count delta text with countBytes, so the expected delta counts below
// are the byte lengths of the unescaped delta strings.

// fixture is one streamed response and what reading it must yield.
type fixture struct {
	name      string
	api       API
	body      string
	usage     Usage
	haveUsage bool
	completed bool
	delta     int64
}

const chatWithUsage = `data: {"id":"chatcmpl-B9MBs8","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-B9MBs8","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":"Hello"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-B9MBs8","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" caf\u00e9\n"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-B9MBs8","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-B9MBs8","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[],"usage":{"prompt_tokens":1719,"completion_tokens":12,"total_tokens":1731,"prompt_tokens_details":{"cached_tokens":1536,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

data: [DONE]

`

// chatToolsNoUsage: tool-call argument deltas, no include_usage, reasoning
// deltas in the vLLM/DeepSeek spelling, data: without the space.
const chatToolsNoUsage = `data:{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Need weather."},"finish_reason":null}]}

data:{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}

data:{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]},"finish_reason":null}]}

data:{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"location\":\"Paris\"}"}}]},"finish_reason":null}]}

: keep-alive comment

data:{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1741569952,"model":"deepseek-reasoner","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data:[DONE]

`

const completionsWithUsage = `data: {"id":"cmpl-7QmVI","object":"text_completion","created":1686617332,"choices":[{"text":"\n\nThis","index":0,"logprobs":null,"finish_reason":null}],"model":"gpt-3.5-turbo-instruct","usage":null}

data: {"id":"cmpl-7QmVI","object":"text_completion","created":1686617332,"choices":[{"text":" is a test","index":0,"logprobs":null,"finish_reason":null}],"model":"gpt-3.5-turbo-instruct","usage":null}

data: {"id":"cmpl-7QmVI","object":"text_completion","created":1686617332,"choices":[{"text":".","index":0,"logprobs":null,"finish_reason":"stop"}],"model":"gpt-3.5-turbo-instruct","usage":null}

data: {"id":"cmpl-7QmVI","object":"text_completion","created":1686617332,"choices":[],"model":"gpt-3.5-turbo-instruct","usage":{"prompt_tokens":"5","completion_tokens":7.0,"total_tokens":12}}

data: [DONE]

`

const responsesText = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_67c9fdce","object":"response","created_at":1741290958,"status":"in_progress","error":null,"incomplete_details":null,"instructions":"You are a helpful assistant.","max_output_tokens":null,"model":"gpt-4.1-2025-04-14","output":[],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},"store":true,"temperature":1.0,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":null,"user":null,"metadata":{}}}

event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_67c9fdce","object":"response","created_at":1741290958,"status":"in_progress","output":[],"usage":null}}

event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_67c9fdcf","type":"message","status":"in_progress","role":"assistant","content":[]}}

event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_67c9fdcf","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_67c9fdcf","output_index":0,"content_index":0,"delta":"Hi","logprobs":[]}

event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_67c9fdcf","output_index":0,"content_index":0,"delta":" there!","logprobs":[]}

event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_67c9fdcf","output_index":0,"content_index":0,"text":"Hi there!","logprobs":[]}

event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_67c9fdcf","output_index":0,"content_index":0,"part":{"type":"output_text","text":"Hi there!","annotations":[]}}

event: response.output_item.done
data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_67c9fdcf","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there!","annotations":[]}]}}

event: response.completed
data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_67c9fdce","object":"response","created_at":1741290958,"status":"completed","error":null,"incomplete_details":null,"model":"gpt-4.1-2025-04-14","output":[{"id":"msg_67c9fdcf","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi there!","annotations":[]}]}],"usage":{"input_tokens":37,"input_tokens_details":{"cached_tokens":12},"output_tokens":11,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":48},"user":null,"metadata":{}}}

`

// responsesReasoningTool: reasoning summary, function-call arguments and an
// audio delta (base64, not text), multi-line data, CRLF line endings applied
// by the caller's variants.
const responsesReasoningTool = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","output":[],"usage":null}}

event: response.reasoning_summary_text.delta
data: {"type":"response.reasoning_summary_text.delta","sequence_number":1,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Look up weather."}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":2,"item_id":"fc_1","output_index":1,
data: "delta":"{\"city\":"}

event: response.function_call_arguments.delta
data: {"type":"response.function_call_arguments.delta","sequence_number":3,"item_id":"fc_1","output_index":1,"delta":"\"Oslo\"}"}

event: response.audio.delta
data: {"type":"response.audio.delta","sequence_number":4,"response_id":"resp_1","delta":"UklGRiQAAABXQVZFZm10IBAAAAABAAEAESsAACJWAAACABAAZGF0YQAAAAA="}

event: response.function_call_arguments.done
data: {"type":"response.function_call_arguments.done","sequence_number":5,"item_id":"fc_1","output_index":1,"arguments":"{\"city\":\"Oslo\"}"}

event: response.completed
data: {"type":"response.completed","sequence_number":6,"response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":"120","input_tokens_details":{"cached_tokens":0},"output_tokens":310.0,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":430}}}

`

const responsesIncomplete = `event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Once upon"}

event: response.incomplete
data: {"type":"response.incomplete","sequence_number":5,"response":{"id":"resp_2","object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":20,"output_tokens":16,"total_tokens":36}}}

`

const responsesFailed = `event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Once"}

event: response.failed
data: {"type":"response.failed","sequence_number":5,"response":{"id":"resp_3","object":"response","status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."},"usage":{"input_tokens":20,"output_tokens":1,"total_tokens":21}}}

`

const anthropicText = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"cache_creation":{"ephemeral_5m_input_tokens":100,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"! \"Hi\""}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}

event: message_stop
data: {"type":"message_stop"}

`

// anthropicThinkingTool: thinking and signature deltas, a tool_use block's
// input_json_delta, and a message_delta that restates input and cache counts.
const anthropicThinkingTool = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-opus-4-1","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Weather tool."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":64,"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

`

// anthropicOneHourCache: message_start reports five-minute and one-hour
// cache writes; the message_delta restates the counts with a larger
// one-hour write (Anthropic reports cumulative figures).
const anthropicOneHourCache = `event: message_start
data: {"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","content":[],"model":"claude-opus-4-1","usage":{"input_tokens":30,"cache_creation_input_tokens":1200,"cache_read_input_tokens":500,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":1000},"output_tokens":1}}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Cached."}}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":30,"cache_creation_input_tokens":1300,"cache_read_input_tokens":500,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":1100},"output_tokens":9}}

event: message_stop
data: {"type":"message_stop"}

`

func fixtures() []fixture {
	return []fixture{
		{
			name: "chat with include_usage", api: OpenAIChat, body: chatWithUsage,
			usage:     Usage{Input: 1719, Output: 12, CacheRead: 1536},
			haveUsage: true, completed: true,
			delta: int64(len("Hello") + len(" café\n")),
		},
		{
			name: "chat tool calls without usage", api: OpenAIChat, body: chatToolsNoUsage,
			completed: true,
			delta:     int64(len("Need weather.") + len("get_weather") + len(`{"`) + len(`location":"Paris"}`)),
		},
		{
			name: "completions with string and float usage", api: OpenAICompletions, body: completionsWithUsage,
			usage:     Usage{Input: 5, Output: 7},
			haveUsage: true, completed: true,
			delta: int64(len("\n\nThis") + len(" is a test") + len(".")),
		},
		{
			name: "responses text", api: OpenAIResponses, body: responsesText,
			usage:     Usage{Input: 37, Output: 11, CacheRead: 12},
			haveUsage: true, completed: true,
			delta: int64(len("Hi") + len(" there!")),
		},
		{
			name: "responses reasoning and tool call", api: OpenAIResponses, body: responsesReasoningTool,
			usage:     Usage{Input: 120, Output: 310, Reasoning: 256},
			haveUsage: true, completed: true,
			delta: int64(len("Look up weather.") + len(`{"city":`) + len(`"Oslo"}`)),
		},
		{
			name: "responses incomplete is a normal end", api: OpenAIResponses, body: responsesIncomplete,
			usage:     Usage{Input: 20, Output: 16},
			haveUsage: true, completed: true,
			delta: int64(len("Once upon")),
		},
		{
			name: "responses failed is not a normal end", api: OpenAIResponses, body: responsesFailed,
			usage:     Usage{Input: 20, Output: 1},
			haveUsage: true, completed: false,
			delta: int64(len("Once")),
		},
		{
			name: "anthropic text with cache", api: AnthropicMessages, body: anthropicText,
			usage:     Usage{Input: 25 + 2000 + 100, Output: 15, CacheRead: 2000, CacheWrite: 100},
			haveUsage: true, completed: true,
			delta: int64(len("Hello") + len(`! "Hi"`)),
		},
		{
			name: "anthropic thinking and tool use", api: AnthropicMessages, body: anthropicThinkingTool,
			usage:     Usage{Input: 472 + 64, Output: 89, CacheRead: 64},
			haveUsage: true, completed: true,
			delta: int64(len("Weather tool.") + len(`{"location": "San Fra`) + len(`ncisco, CA"}`)),
		},
		{
			name: "anthropic one-hour cache writes, restated at the end", api: AnthropicMessages, body: anthropicOneHourCache,
			usage:     Usage{Input: 30 + 1300 + 500, Output: 9, CacheRead: 500, CacheWrite: 1300, CacheWrite1h: 1100},
			haveUsage: true, completed: true,
			delta: int64(len("Cached.")),
		},
	}
}
