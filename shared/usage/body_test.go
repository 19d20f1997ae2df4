package usage

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// scanned is what the body scan reads from chunks, and what the whole-body
// readers read from the same bytes.
type scanned struct {
	Usage      Usage
	OK         bool
	Unreadable bool
}

func scan(api API, chunks ...[]byte) scanned {
	var b Body
	b.Reset(api)
	for _, c := range chunks {
		b.Write(c)
	}
	u, ok := b.Usage()
	return scanned{u, ok, b.Unreadable()}
}

// reference is the whole-body reading: FromJSON's usage, and unreadable
// exactly when the body is not one valid JSON value.
func reference(api API, body []byte) scanned {
	u, ok := FromJSON(api, body)
	return scanned{u, ok, !jsonx.Valid(body)}
}

// scanBodies are answers whose reading turns on every rule of FromJSON:
// both shapes, details objects, repeated and escaped names, a usage that is
// not an object, numbers at chunk ends, literals, escapes, nesting.
var scanBodies = []struct {
	api  API
	body string
}{
	{OpenAIChat, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi \"there\" \u00e9\ud83d\ude00\\n","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":32}},"system_fingerprint":"fp"}`},
	{OpenAIChat, "{\n  \"usage\" : {\n    \"prompt_tokens\" : 5 ,\n    \"completion_tokens\" : 7.0e0\n  }\n}\n"},
	{OpenAICompletions, `{"choices":[{"text":"x"}],"usage":{"prompt_tokens":"12","completion_tokens":-0}}`},
	{OpenAIResponses, `{"output":[{"type":"message","content":[{"type":"output_text","text":"t"}]}],"usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":256},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":7}}}`},
	{AnthropicMessages, `{"type":"message","content":[{"type":"text","text":"Hi"}],"usage":{"input_tokens":2095,"cache_creation_input_tokens":2051,"cache_read_input_tokens":10000,"cache_creation":{"ephemeral_5m_input_tokens":51,"ephemeral_1h_input_tokens":2000},"output_tokens":503}}`},
	{OpenAIChat, `{"usage":{"prompt_tokens":1,"prompt_tokens":2,"completion_tokens":3,"completion_tokens":"x"}}`},
	{OpenAIChat, `{"\u0075sage":{"prompt_tokens":4,"completion_tokens":5},"usage":{"prompt_tokens":9,"completion_tokens":9}}`},
	{OpenAIChat, `{"usage":null,"usage":{"prompt_tokens":9,"completion_tokens":9}}`},
	{OpenAIChat, `{"usag":{"prompt_tokens":1,"completion_tokens":1},"usagee":1,"USAGE":{"prompt_tokens":1,"completion_tokens":1}}`},
	{OpenAIChat, `{"choices":[{"usage":{"prompt_tokens":1,"completion_tokens":1}}],"x":{"usage":{"prompt_tokens":1,"completion_tokens":1}}}`},
	{OpenAIChat, `{"usage":{"p\u0072ompt_tokens":6,"completion_tokens":1e3,"prompt_tokens_details":3,"prompt_tokens_details":{"cached_tokens":2}}}`},
	{AnthropicMessages, `{"usage":{"input_tokens":1,"output_tokens":1,"cache_creation":[],"cache_creation_input_tokens":4}}`},
	{OpenAIResponses, `{"usage":{"input_tokens":1e300,"output_tokens":"99999999999999999999999"}}`},
	{OpenAIChat, `{"usage":{"prompt_tokens":5,"completion_tokens":5}}   ` + "\t\r\n"},
	{OpenAIChat, `{"usage":{"prompt_tokens":5,"completion_tokens":5}}}`},
	{OpenAIChat, `{"usage":{"prompt_tokens":5,"completion_tokens":5}`},
	{OpenAIChat, `{"usage":{"prompt_tokens":05,"completion_tokens":5}}`},
	{OpenAIChat, `{"usage":{"prompt_tokens":5.,"completion_tokens":5}}`},
	{OpenAIChat, `{"usage":{"prompt_tokens":-,"completion_tokens":5}}`},
	{OpenAIChat, `{"usage":{"prompt_tokens":1e+,"completion_tokens":5}}`},
	{OpenAIChat, `{"a":[1,2,],"usage":{"prompt_tokens":5,"completion_tokens":5}}`},
	{OpenAIChat, `{"a":[true,false,null,{},[],""],"usage":{"prompt_tokens":5,"completion_tokens":5}}`},
	{OpenAIChat, `{"a":tru,"usage":{"prompt_tokens":5,"completion_tokens":5}}`},
	{OpenAIChat, `{"a":"\x","usage":{"prompt_tokens":5,"completion_tokens":5}}`},
	{OpenAIChat, `{"a":"\u12g4","usage":{"prompt_tokens":5,"completion_tokens":5}}`},
	{OpenAIChat, "{\"a\":\"tab\there\",\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}"},
	{OpenAIChat, "{\"a\":\"\xff\xfe invalid UTF-8 is kept\",\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":5}}"},
	{OpenAIChat, `{"a":1,}`},
	{OpenAIChat, `{,"usage":{}}`},
	{OpenAIChat, `{"usage" {"prompt_tokens":5,"completion_tokens":5}}`},
	{OpenAIChat, `[{"usage":{"prompt_tokens":5,"completion_tokens":5}}]`},
	{OpenAIChat, `"usage"`},
	{OpenAIChat, `12`},
	{OpenAIChat, `12 3`},
	{OpenAIChat, `-0.5e-7`},
	{OpenAIChat, ``},
	{OpenAIChat, `   `},
	{OpenAIChat, `{}`},
	{OpenAIChat, `{"usage":{}}`},
	{OpenAIChat, `{"error":{"message":"Rate limit reached","type":"requests"}}`},
	{0, `{"usage":{"prompt_tokens":5,"completion_tokens":5}}`},
}

// The scan reads an answer as FromJSON reads it whole, wherever the chunks
// are split: at every byte into two chunks, and one byte a chunk.
func TestTheBodyScanReadsWhatFromJSONReadsAtEverySplit(t *testing.T) {
	for _, c := range scanBodies {
		body := []byte(c.body)
		want := reference(c.api, body)
		require.Equal(t, want, scan(c.api, body), "%s", body)
		for k := 0; k <= len(body); k++ {
			require.Equal(t, want, scan(c.api, body[:k], body[k:]), "split at %d: %s", k, body)
		}
		bytewise := make([][]byte, len(body))
		for i := range body {
			bytewise[i] = body[i : i+1]
		}
		require.Equal(t, want, scan(c.api, bytewise...), "a byte a chunk: %s", body)
	}
}

// Nesting is bounded as the whole-body reader bounds it: jsonx.MaxDepth
// levels are a valid answer, one more is not.
func TestTheBodyScanNestsAsDeepAsFromJSON(t *testing.T) {
	t.Parallel()
	for _, depth := range []int{jsonx.MaxDepth, jsonx.MaxDepth + 1} {
		junk := strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1)
		body := []byte(`{"junk":` + junk + `,"usage":{"prompt_tokens":5,"completion_tokens":5}}`)
		want := reference(OpenAIChat, body)
		require.Equal(t, depth == jsonx.MaxDepth, want.OK, "depth %d", depth)
		require.Equal(t, want, scan(OpenAIChat, body))
		for _, k := range []int{1, 9, len(junk) / 2, len(body) - 3} {
			require.Equal(t, want, scan(OpenAIChat, body[:k], body[k:]), "depth %d split at %d", depth, k)
		}
	}
}

// An answer of any size is read with bounded state: a 9 MiB completion in
// 16 KiB chunks keeps only its usage object, and is read whole.
func TestAnAnswerOfAnySizeIsReadKeepingOnlyItsUsageObject(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("tok ", 2_300_000)
	body := []byte(`{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"` + text +
		`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2300000,"total_tokens":2300005}}`)
	require.Greater(t, len(body), 8<<20)
	var b Body
	b.Reset(OpenAIChat)
	for i := 0; i < len(body); i += 16 << 10 {
		b.Write(body[i:min(i+16<<10, len(body))])
	}
	u, ok := b.Usage()
	require.True(t, ok)
	require.Equal(t, int64(2_300_005), u.Total())
	require.False(t, b.Unreadable())
	require.Equal(t, int64(len(body)), b.Bytes())
	require.Less(t, cap(b.capture), 256, "only the usage object is kept")
	require.LessOrEqual(t, cap(b.name), 64)
}

// A usage object larger than the scan keeps is unreadable, never "no
// usage": the answer is charged as one whose usage could not be read.
func TestAUsageObjectLargerThanTheScanKeepsIsUnreadable(t *testing.T) {
	t.Parallel()
	body := []byte(`{"usage":{"junk":"` + strings.Repeat("x", maxUsageObject) + `","prompt_tokens":5,"completion_tokens":5}}`)
	require.True(t, reference(OpenAIChat, body).OK, "the whole-body reader reads it")
	got := scan(OpenAIChat, body[:100], body[100:])
	require.False(t, got.OK)
	require.True(t, got.Unreadable)
}

// A Body is reused across answers: Reset forgets the last one.
func TestAResetBodyForgetsTheLastAnswer(t *testing.T) {
	t.Parallel()
	var b Body
	b.Reset(OpenAIChat)
	b.Write([]byte(`{"a":[[[{"usage":1}]]],"usage":{"prompt_tokens":5,"completion_tokens":5}}`))
	_, ok := b.Usage()
	require.True(t, ok)
	b.Reset(AnthropicMessages)
	b.Write([]byte(`{"usage":{"input_tokens":1,`))
	_, ok = b.Usage()
	require.False(t, ok)
	require.True(t, b.Unreadable())
	b.Reset(AnthropicMessages)
	b.Write([]byte(`{"usage":{"input_tokens":1,"output_tokens":2}}`))
	u, ok := b.Usage()
	require.True(t, ok)
	require.Equal(t, Usage{Input: 1, Output: 2}, u)
}

func FuzzTheBodyScanReadsWhatFromJSONReads(f *testing.F) {
	for _, c := range scanBodies {
		f.Add(uint8(c.api), []byte(c.body), uint64(len(c.body)))
	}
	for _, fx := range fixtures() {
		f.Add(uint8(fx.api), []byte(fx.body), uint64(3))
	}
	f.Fuzz(func(t *testing.T, api uint8, body []byte, seed uint64) {
		want := reference(API(api), body)
		rng := rand.New(rand.NewPCG(seed, 2))
		var b Body
		b.Reset(API(api))
		for _, c := range randomSplit(rng, body) {
			b.Write(c)
		}
		u, ok := b.Usage()
		got := scanned{u, ok, b.Unreadable()}
		if b.over {
			require.True(t, got.Unreadable)
			require.False(t, got.OK)
			return
		}
		require.Equal(t, want, got, "%q", body)
		require.LessOrEqual(t, len(b.name), maxUsageName)
	})
}
