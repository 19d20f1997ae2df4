package usage

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// countBytes is the tests' delta counter: one token per byte, so expected
// counts are plain string lengths and any double or missed count shows.
func countBytes(text []byte) int64 { return int64(len(text)) }

type streamResult struct {
	Usage     Usage
	HaveUsage bool
	Completed bool
	Delta     int64
}

func read(api API, chunks ...[]byte) streamResult {
	s := NewStream(api, countBytes)
	for _, c := range chunks {
		s.Write(c)
	}
	u, ok := s.Usage()
	return streamResult{Usage: u, HaveUsage: ok, Completed: s.Completed(), Delta: s.DeltaTokens()}
}

func (f fixture) want() streamResult {
	return streamResult{Usage: f.usage, HaveUsage: f.haveUsage, Completed: f.completed, Delta: f.delta}
}

// lineEndings gives the fixture with LF, CRLF and CR line terminators; SSE
// accepts all three and the result must not depend on which one a server uses.
func lineEndings(body string) map[string][]byte {
	return map[string][]byte{
		"LF":   []byte(body),
		"CRLF": []byte(strings.ReplaceAll(body, "\n", "\r\n")),
		"CR":   []byte(strings.ReplaceAll(body, "\n", "\r")),
	}
}

func TestStreamFixturesYieldTheirUsageCompletionAndDeltas(t *testing.T) {
	t.Parallel()
	for _, f := range fixtures() {
		for ending, body := range lineEndings(f.body) {
			t.Run(f.name+"/"+ending, func(t *testing.T) {
				require.Equal(t, f.want(), read(f.api, body))
			})
		}
	}
}

func TestStreamResultDoesNotDependOnWhereTheBytesAreSplit(t *testing.T) {
	t.Parallel()
	for _, f := range fixtures() {
		for ending, body := range lineEndings(f.body) {
			t.Run(f.name+"/"+ending, func(t *testing.T) {
				want := f.want()
				for i := 0; i <= len(body); i++ {
					got := read(f.api, body[:i], body[i:])
					require.Equal(t, want, got, "split at byte %d", i)
				}
				ones := make([][]byte, len(body))
				for i := range body {
					ones[i] = body[i : i+1]
				}
				require.Equal(t, want, read(f.api, ones...), "1-byte chunks")
				rng := rand.New(rand.NewPCG(1, uint64(len(body))))
				for range 50 {
					require.Equal(t, want, read(f.api, randomSplit(rng, body)...), "random chunks")
				}
			})
		}
	}
}

func randomSplit(rng *rand.Rand, b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		n := 1 + rng.IntN(min(len(b), 64))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func TestStreamCutBeforeItsEndIsNotCompleted(t *testing.T) {
	t.Parallel()
	for _, f := range fixtures() {
		if !f.completed {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			body := []byte(f.body)
			for i := 0; i < len(body); i++ {
				require.False(t, read(f.api, body[:i]).Completed, "cut after %d of %d bytes", i, len(body))
			}
		})
	}
}

func TestStreamWithoutFinalBlankLineNeverDispatchesTheLastEvent(t *testing.T) {
	t.Parallel()
	require.False(t, read(OpenAIChat, []byte("data: [DONE]\n")).Completed)
	require.False(t, read(OpenAIChat, []byte("data: [DONE]")).Completed)
	require.True(t, read(OpenAIChat, []byte("data: [DONE]\n\n")).Completed)
	require.True(t, read(OpenAIChat, []byte("data: [DONE]\r\n\r\n")).Completed)
}

func TestStreamErrorEventsAreNotANormalEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		api  API
		body string
	}{
		{"openai error chunk then close", OpenAIChat, `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"},
		{"responses error event", OpenAIResponses, "event: error\ndata: {\"type\":\"error\",\"code\":\"ERR_SOMETHING\",\"message\":\"Something went wrong\",\"sequence_number\":1}\n\n"},
		{"anthropic overloaded", AnthropicMessages, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"},
		{"anthropic done marker is not message_stop", AnthropicMessages, "data: [DONE]\n\n"},
		{"responses done marker is not response.completed", OpenAIResponses, "data: [DONE]\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := read(tt.api, []byte(tt.body))
			require.False(t, got.Completed)
			require.False(t, got.HaveUsage)
		})
	}
}

func TestStreamEventNameStandsInForAMissingJSONType(t *testing.T) {
	t.Parallel()
	got := read(AnthropicMessages, []byte(
		"event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"+
			"event: message_stop\ndata: {}\n\n"))
	require.Equal(t, streamResult{Usage: Usage{Input: 3, Output: 1}, HaveUsage: true, Completed: true}, got)
}

func TestStreamJSONTypeWinsOverTheEventName(t *testing.T) {
	t.Parallel()
	got := read(AnthropicMessages, []byte("event: message_stop\ndata: {\"type\":\"ping\"}\n\n"))
	require.False(t, got.Completed)
}

func TestStreamInvalidJSONEventReportsNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		api  API
		body string
	}{
		{"truncated usage chunk", OpenAIChat, `data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3}` + "\n\n"},
		{"usage chunk with trailing garbage", OpenAIChat, `data: {"choices":[{"delta":{"content":"abc"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}} x` + "\n\n"},
		{"array instead of object", OpenAIChat, `data: [{"usage":{"prompt_tokens":5,"completion_tokens":3}}]` + "\n\n"},
		{"anthropic truncated start", AnthropicMessages, `data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}` + "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, streamResult{}, read(tt.api, []byte(tt.body)))
		})
	}
}

func TestStreamUsageNeedsBothInputAndOutputCounters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		api  API
		body string
	}{
		{"openai output only", OpenAIChat, `data: {"choices":[],"usage":{"completion_tokens":3}}` + "\n\n"},
		{"openai fractional input", OpenAIChat, `data: {"choices":[],"usage":{"prompt_tokens":2.5,"completion_tokens":3}}` + "\n\n"},
		{"openai negative output", OpenAIChat, `data: {"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":-3}}` + "\n\n"},
		{"responses usage null", OpenAIResponses, `data: {"type":"response.completed","response":{"usage":null}}` + "\n\n"},
		{"anthropic delta without start", AnthropicMessages, `data: {"type":"message_delta","usage":{"output_tokens":9}}` + "\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.False(t, read(tt.api, []byte(tt.body)).HaveUsage)
		})
	}
}

func TestStreamLaterOpenAIUsageReplacesEarlierCumulativeUsage(t *testing.T) {
	t.Parallel()
	got := read(OpenAIChat, []byte(
		`data: {"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`+"\n\n"+
			`data: {"choices":[{"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`+"\n\n"+
			"data: [DONE]\n\n"))
	require.Equal(t, streamResult{Usage: Usage{Input: 5, Output: 2}, HaveUsage: true, Completed: true, Delta: 2}, got)
}

func TestStreamCountsEveryChoiceOfAMultiChoiceChunk(t *testing.T) {
	t.Parallel()
	got := read(OpenAIChat, []byte(`data: {"choices":[{"index":0,"delta":{"content":"ab"}},{"index":1,"delta":{"content":"cde","refusal":"no"}}]}`+"\n\n"))
	require.Equal(t, int64(7), got.Delta)
}

func TestStreamFieldParsingFollowsTheSSERules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want streamResult
	}{
		{"only one leading space is dropped", "data:  [DONE]\n\n", streamResult{Completed: true}},
		{"comment lines are ignored", ": data: [DONE]\n\n", streamResult{}},
		{"unknown fields are ignored", "id: 7\nretry: 100\nfoo\ndata: [DONE]\n\n", streamResult{Completed: true}},
		{"field name is case-sensitive", "Data: [DONE]\n\n", streamResult{}},
		{"blank line without data dispatches nothing", "\n\n\nevent: x\n\n", streamResult{}},
		{"data joins lines with LF", "data: {\"choices\":[{\"delta\":\n data:{\"content\":\"xy\"}}]}\n\n",
			streamResult{}}, // " data" is not the data field
		{"multi-line data", "data: {\"choices\":[{\"delta\":\ndata:{\"content\":\"xy\"}}]}\n\n", streamResult{Delta: 2}},
		{"mixed terminators", "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\rdata: [DONE]\r\r\n", streamResult{Delta: 1, Completed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, read(OpenAIChat, []byte(tt.body)))
		})
	}
}

func TestStreamCRLFSplitAcrossWritesIsOneTerminator(t *testing.T) {
	t.Parallel()
	// CR ends a line; the LF in the next write must not read as a blank
	// line that dispatches the half-built event early.
	got := read(OpenAIChat,
		[]byte("data: {\"choices\":[{\"delta\":\r"), []byte("\ndata: {\"content\":\"x\"}}]}\r"), []byte("\n\r\n"))
	require.Equal(t, streamResult{Delta: 1}, got)
}

func TestStreamOversizeLineIsDroppedAndMemoryStaysBounded(t *testing.T) {
	t.Parallel()
	s := NewStream(OpenAIChat, countBytes)
	s.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\""))
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for range 64 { // 4 MiB without a newline
		s.Write(chunk)
		require.LessOrEqual(t, s.split.Buffered(), 2*maxLine)
	}
	s.Write([]byte("\"}}]}\n\n"))
	require.Zero(t, s.DeltaTokens(), "the oversize event is dropped, not truncated")
	s.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n"))
	require.Equal(t, int64(2), s.DeltaTokens(), "events after the oversize line still count")
	require.True(t, s.Completed())
}

func TestStreamOversizeLineInOneWriteIsDroppedLikeASplitOne(t *testing.T) {
	t.Parallel()
	huge := "data: {\"choices\":[{\"delta\":{\"content\":\"" + strings.Repeat("a", maxLine) + "\"}}]}\n\ndata: [DONE]\n\n"
	require.Equal(t, streamResult{Completed: true}, read(OpenAIChat, []byte(huge)))
	mid := len(huge) / 2
	require.Equal(t, streamResult{Completed: true}, read(OpenAIChat, []byte(huge[:mid]), []byte(huge[mid:])))
}

func TestStreamOversizeCommentDoesNotDropItsEvent(t *testing.T) {
	t.Parallel()
	body := "data: [DONE]\n:" + strings.Repeat(" ", maxLine+10) + "\n\n"
	require.True(t, read(OpenAIChat, []byte(body)).Completed)
}

func TestStreamOversizeMultiLineEventIsDropped(t *testing.T) {
	t.Parallel()
	line := "data: " + strings.Repeat(" ", maxLine/2) + "\n"
	body := "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n" + line + line + line + "\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"y\"}}]}\n\n"
	require.Equal(t, streamResult{Delta: 1}, read(OpenAIChat, []byte(body)))
}

func TestStreamSurvivesGarbage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, api := range []API{0, OpenAIChat, OpenAICompletions, OpenAIResponses, AnthropicMessages, 200} {
		s := NewStream(api, countBytes)
		for range 200 {
			b := make([]byte, rng.IntN(300))
			const alphabet = "data: {}[]\"\\\r\n:event usage0123456789,"
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			s.Write(b)
		}
		u, _ := s.Usage()
		require.GreaterOrEqual(t, u.Total(), int64(0))
		require.GreaterOrEqual(t, s.DeltaTokens(), int64(0))
	}
}

func TestStreamIgnoresNilAndNegativeCounters(t *testing.T) {
	t.Parallel()
	body := []byte(`data: {"choices":[{"delta":{"content":"abc"}}]}` + "\n\n")
	s := NewStream(OpenAIChat, nil)
	s.Write(body)
	require.Zero(t, s.DeltaTokens())
	s = NewStream(OpenAIChat, func([]byte) int64 { return -5 })
	s.Write(body)
	require.Zero(t, s.DeltaTokens())
}

func TestStreamUnknownAPIReportsNothing(t *testing.T) {
	t.Parallel()
	require.Equal(t, streamResult{}, read(0, []byte(chatWithUsage)))
}

func TestStreamEventThatLostAnOversizeDataLineIsDroppedWhole(t *testing.T) {
	t.Parallel()
	// The first data line parses on its own; dispatching it would count
	// text from an event whose rest was thrown away.
	body := "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\ndata: " + strings.Repeat(" ", maxLine) + "\n\n"
	require.Equal(t, streamResult{}, read(OpenAIChat, []byte(body)))
	mid := len(body) - 100
	require.Equal(t, streamResult{}, read(OpenAIChat, []byte(body[:mid]), []byte(body[mid:])))
}

func TestAnOversizeEventIsReportedLost(t *testing.T) {
	t.Parallel()
	s := NewStream(OpenAIResponses, nil)
	s.Write([]byte("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n"))
	require.False(t, s.LostEvents())
	big := "data: {\"type\":\"response.completed\",\"response\":{\"output\":\"" + strings.Repeat("x", maxEvent) + "\"}}\n\n"
	for i := 0; i < len(big); i += 4096 {
		s.Write([]byte(big[i:min(i+4096, len(big))]))
	}
	require.True(t, s.LostEvents())
	require.False(t, s.Completed())
}
