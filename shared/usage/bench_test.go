package usage

import (
	"strings"
	"testing"
)

// benchCount stands in for the estimator: cheap, so the figures are the
// reader's own cost.
func benchCount(text []byte) int64 { return int64(len(text)+3) / 4 }

// longStream repeats a fixture's delta event n times between its head and
// tail, the shape of a long generation.
func longStream(head, delta, tail string, n int) []byte {
	return []byte(head + strings.Repeat(delta, n) + tail)
}

var benchStreams = []struct {
	name string
	api  API
	body []byte
}{
	{"chat", OpenAIChat, longStream("",
		`data: {"id":"chatcmpl-B9MBs8","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n",
		`data: {"id":"chatcmpl-B9MBs8","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":1719,"completion_tokens":1000,"total_tokens":2719}}`+"\n\ndata: [DONE]\n\n", 1000)},
	{"responses", OpenAIResponses, longStream("",
		"event: response.output_text.delta\n"+`data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_67c9fdcf","output_index":0,"content_index":0,"delta":" token","logprobs":[]}`+"\n\n",
		"event: response.completed\n"+`data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":37,"output_tokens":1000,"total_tokens":1037}}}`+"\n\n", 1000)},
	{"anthropic", AnthropicMessages, longStream(
		"event: message_start\n"+`data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":25,"output_tokens":1}}}`+"\n\n",
		"event: content_block_delta\n"+`data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" token"}}`+"\n\n",
		"event: message_delta\n"+`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1000}}`+"\n\nevent: message_stop\n"+`data: {"type":"message_stop"}`+"\n\n", 1000)},
}

// BenchmarkStreamThroughput feeds whole streams in 16 KiB writes (Envoy's
// usual body chunk size) and reports MB/s of SSE parsed.
func BenchmarkStreamThroughput(b *testing.B) {
	for _, bs := range benchStreams {
		b.Run(bs.name, func(b *testing.B) {
			b.SetBytes(int64(len(bs.body)))
			b.ReportAllocs()
			for b.Loop() {
				s := NewStream(bs.api, benchCount)
				for rest := bs.body; len(rest) > 0; {
					n := min(len(rest), 16<<10)
					s.Write(rest[:n])
					rest = rest[n:]
				}
				if !s.Completed() {
					b.Fatal("stream did not complete")
				}
			}
		})
	}
}

// BenchmarkStreamDeltaChunk is the per-chunk cost the filter pays on every
// body callback of a streamed response: one ~100-byte delta event per write.
func BenchmarkStreamDeltaChunk(b *testing.B) {
	chunks := map[string]struct {
		api   API
		chunk string
	}{
		"chat":      {OpenAIChat, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" the"}}]}` + "\n\n"},
		"responses": {OpenAIResponses, `data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":" the"}` + "\n\n"},
		"anthropic": {AnthropicMessages, `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the"}}` + "\n\n"},
	}
	for _, name := range []string{"chat", "responses", "anthropic"} {
		c := chunks[name]
		chunk := []byte(c.chunk)
		b.Run(name, func(b *testing.B) {
			s := NewStream(c.api, benchCount)
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			for b.Loop() {
				s.Write(chunk)
			}
			if s.DeltaTokens() == 0 {
				b.Fatal("no delta counted")
			}
		})
	}
}

func BenchmarkFromJSON(b *testing.B) {
	body := []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("word ", 400) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := FromJSON(OpenAIChat, body); !ok {
			b.Fatal("no usage")
		}
	}
}

// BenchmarkBodyScan is the body scan on the answers BenchmarkFromJSON
// reads whole (body=long) and on a 300-byte completion (body=short), in one
// write and in 16 KiB writes: what reading an answer as it passes costs
// against reading it whole.
func BenchmarkBodyScan(b *testing.B) {
	short := []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, how can I help you today?"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024}}}`)
	long := []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion","created":1741570283,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` + strings.Repeat("word ", 400) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024}}}`)
	for _, c := range []struct {
		name string
		body []byte
	}{{"short", short}, {"long", long}} {
		b.Run("body="+c.name+"/reader=fromjson", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if _, ok := FromJSON(OpenAIChat, c.body); !ok {
					b.Fatal("no usage")
				}
			}
		})
		b.Run("body="+c.name+"/reader=scan", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			var s Body
			for b.Loop() {
				s.Reset(OpenAIChat)
				s.Write(c.body)
				if _, ok := s.Usage(); !ok {
					b.Fatal("no usage")
				}
			}
		})
	}
}
