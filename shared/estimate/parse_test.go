package estimate

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseRejectsBodiesThatAreNotOneJSONObject(t *testing.T) {
	for _, body := range []string{"", "   ", "[]", `"x"`, "null", "42", "{", `{"a":}`, `{} {}`, "\xff{}", `{"messages":[}`} {
		_, err := Parse([]byte(body), 4096)
		require.ErrorIs(t, err, ErrNotJSON, "%q", body)
	}
}

func TestParseTakesTheLargestStatedCeilingOfAllThreeFields(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte(`{"max_tokens":100,"max_completion_tokens":"300","max_output_tokens":200.0}`), 4096)
	require.NoError(t, err)
	require.True(t, r.OutputStated)
	require.Equal(t, int64(300), r.Output)

	r, err = Parse([]byte(`{"max_tokens":-5,"max_output_tokens":50}`), 4096)
	require.NoError(t, err)
	require.Equal(t, int64(50), r.Output, "an ignored field does not hide a valid one")
}

func TestParseReservesTheDefaultCeilingWhenNoneIsStated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		def  int64
		want int64
	}{
		{`{}`, 4096, 4096},
		{`{"max_tokens":null}`, 4096, 4096},
		{`{"max_tokens":"lots"}`, 4096, 4096},
		{`{}`, -1, 0},
		{`{}`, math.MaxInt64, MaxOutput},
	} {
		r, err := Parse([]byte(tc.body), tc.def)
		require.NoError(t, err)
		require.False(t, r.OutputStated, tc.body)
		require.Equal(t, tc.want, r.Output, tc.body)
	}
}

func TestParseReadsModelAndStreamFlagsOnlyFromTheirJSONTypes(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte(`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`), 1)
	require.NoError(t, err)
	require.Equal(t, Request{Input: requestBase, Output: 1, Model: "gpt-4o", Stream: true, StreamIncludeUsage: true}, r)

	r, err = Parse([]byte(`{"model":42,"stream":"true","stream_options":{"include_usage":"yes"}}`), 1)
	require.NoError(t, err)
	require.Equal(t, Request{Input: requestBase, Output: 1}, r)
}

func TestParseModelOutlivesTheBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"model":"claude-sonnet"}`)
	r, err := Parse(body, 1)
	require.NoError(t, err)
	copy(body, strings.Repeat("x", len(body)))
	require.Equal(t, "claude-sonnet", r.Model)
}

// Every field a backend renders into the prompt must add at least its
// text's estimate; a field the walk skipped would be free input.
func TestParseChargesEveryPromptField(t *testing.T) {
	t.Parallel()
	const x = " The quick brown fox jumps over the lazy dog while counting 12345 sheep."
	for _, tc := range []struct {
		name, with, without string
	}{
		{"chat content string", `{"messages":[{"role":"user","content":"` + x + `"}]}`, `{"messages":[{"role":"user","content":""}]}`},
		{"chat text part", `{"messages":[{"role":"user","content":[{"type":"text","text":"` + x + `"}]}]}`, `{"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`},
		{"message name", `{"messages":[{"role":"user","name":"` + x + `","content":""}]}`, `{"messages":[{"role":"user","name":"","content":""}]}`},
		{"tool call arguments", `{"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":"` + x + `"}}]}]}`, `{"messages":[{"role":"assistant","tool_calls":[{"function":{"arguments":""}}]}]}`},
		{"function_call arguments", `{"messages":[{"role":"assistant","function_call":{"arguments":"` + x + `"}}]}`, `{"messages":[{"role":"assistant","function_call":{"arguments":""}}]}`},
		{"tool_call_id", `{"messages":[{"role":"tool","tool_call_id":"` + x + `","content":""}]}`, `{"messages":[{"role":"tool","tool_call_id":"","content":""}]}`},
		{"unknown message field", `{"messages":[{"role":"assistant","reasoning_content":"` + x + `"}]}`, `{"messages":[{"role":"assistant","reasoning_content":""}]}`},
		{"tools", `{"tools":[{"description":"` + x + `"}]}`, `{"tools":[{"description":""}]}`},
		{"functions", `{"functions":[{"description":"` + x + `"}]}`, `{"functions":[{"description":""}]}`},
		{"response_format", `{"response_format":{"d":"` + x + `"}}`, `{"response_format":{"d":""}}`},
		{"responses text.format", `{"text":{"format":{"d":"` + x + `"}}}`, `{"text":{"format":{"d":""}}}`},
		{"prompt string", `{"prompt":"` + x + `"}`, `{"prompt":""}`},
		{"prompt array", `{"prompt":["a","` + x + `"]}`, `{"prompt":["a",""]}`},
		{"input string", `{"input":"` + x + `"}`, `{"input":""}`},
		{"input message item", `{"input":[{"role":"user","content":[{"type":"input_text","text":"` + x + `"}]}]}`, `{"input":[{"role":"user","content":[{"type":"input_text","text":""}]}]}`},
		{"input function output item", `{"input":[{"type":"function_call_output","output":"` + x + `"}]}`, `{"input":[{"type":"function_call_output","output":""}]}`},
		{"instructions", `{"instructions":"` + x + `"}`, `{"instructions":""}`},
		{"system string", `{"system":"` + x + `"}`, `{"system":""}`},
		{"system blocks", `{"system":[{"type":"text","text":"` + x + `"}]}`, `{"system":[{"type":"text","text":""}]}`},
		{"anthropic tool_use input", `{"messages":[{"role":"assistant","content":[{"type":"tool_use","input":{"q":"` + x + `"}}]}]}`, `{"messages":[{"role":"assistant","content":[{"type":"tool_use","input":{"q":""}}]}]}`},
		{"anthropic tool_result content", `{"messages":[{"role":"user","content":[{"type":"tool_result","content":"` + x + `"}]}]}`, `{"messages":[{"role":"user","content":[{"type":"tool_result","content":""}]}]}`},
		{"unknown part type", `{"messages":[{"role":"user","content":[{"type":"input_audio","data":"` + x + `"}]}]}`, `{"messages":[{"role":"user","content":[{"type":"input_audio","data":""}]}]}`},
	} {
		with, err := Parse([]byte(tc.with), 1)
		require.NoError(t, err, tc.name)
		without, err := Parse([]byte(tc.without), 1)
		require.NoError(t, err, tc.name)
		// Fields counted by their JSON text may pair x's last punctuation
		// with the closing quote, so one token of slack at the seam.
		require.GreaterOrEqual(t, with.Input-without.Input, TextString(x)-1, tc.name)
	}
}

func TestParseChargesAFloorPerMessage(t *testing.T) {
	t.Parallel()
	one, err := Parse([]byte(`{"messages":[{"role":"user","content":""}]}`), 1)
	require.NoError(t, err)
	three, err := Parse([]byte(`{"messages":[{"role":"user","content":""},{"role":"user","content":""},{"role":"user","content":""}]}`), 1)
	require.NoError(t, err)
	require.Equal(t, int64(requestBase+messageFloor), one.Input)
	require.Equal(t, int64(2*messageFloor), three.Input-one.Input)
}

func TestParseChargesTokenIDPromptsOneTokenEach(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte(`{"prompt":[[1,2,3],[4,5]]}`), 1)
	require.NoError(t, err)
	require.Equal(t, int64(requestBase+5), r.Input)
}

func TestParseChargesImagesAFixedCostByDetail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		part string
		want int64
	}{
		{`{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}`, imageLowCost},
		{`{"type":"image_url","image_url":{"url":"https://x/y.png"}}`, imageHighCost},
		{`{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"low"}`, imageLowCost},
		{`{"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"high"}`, imageHighCost},
		{`{"type":"image","source":{"type":"base64","data":"AAAA"}}`, imageHighCost},
	} {
		r, err := Parse([]byte(`{"messages":[{"role":"user","content":[`+tc.part+`]}]}`), 1)
		require.NoError(t, err)
		require.Equal(t, requestBase+messageFloor+tc.want, r.Input, tc.part)
	}
}

func TestParseChargesNothingForFieldsThatAreNotPromptInput(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte(`{"model":"m","temperature":0.2,"top_p":1,"user":"u-123","metadata":{"k":"a long value that is not sent to the model"},"stream":false,"max_tokens":5}`), 1)
	require.NoError(t, err)
	require.Equal(t, int64(requestBase), r.Input)
}

func TestWalkerSaturatesAtMaxInputWithoutOverflow(t *testing.T) {
	t.Parallel()
	var w walker
	w.add(MaxInput - 1)
	w.add(5)
	require.Equal(t, MaxInput, w.total)
	w.add(math.MaxInt64)
	w.add(-7)
	require.Equal(t, MaxInput, w.total)
}

func TestTheOutputCeilingIsPerChoiceSoNAndBestOfMultiplyTheHold(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]int64{
		`{"messages":[],"max_tokens":100}`:                     100,
		`{"messages":[],"max_tokens":100,"n":3}`:               300,
		`{"messages":[],"max_tokens":100,"n":"4"}`:             400,
		`{"prompt":"x","max_tokens":100,"n":2,"best_of":5}`:    500,
		`{"messages":[],"n":2}`:                                2 * 4096,
		`{"messages":[],"max_tokens":100,"n":0}`:               100,
		`{"messages":[],"max_tokens":100,"n":-3}`:              100,
		`{"messages":[],"max_tokens":9000000,"n":1000000}`:     MaxOutput,
		`{"messages":[],"max_tokens":100,"n":{"nested":true}}`: 100,
	} {
		r, err := Parse([]byte(body), 4096)
		require.NoError(t, err, body)
		require.Equal(t, want, r.Hold()-r.Input, body)
		require.LessOrEqual(t, r.Output, MaxOutput, "Output stays the per-choice ceiling")
	}
}

func TestParseCountsImagePartsOfEveryAPI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want int64
	}{
		{"no images", `{"messages":[{"role":"user","content":"hi"}]}`, 0},
		{"openai image_url parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"what"},
			{"type":"image_url","image_url":{"url":"data:,"}},{"type":"image_url","image_url":{"url":"x","detail":"low"}}]}]}`, 2},
		{"responses input_image items", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"},
			{"type":"input_text","text":"a"},{"type":"input_image","image_url":"y"},{"type":"input_image","file_id":"f"}]}]}`, 3},
		{"anthropic image blocks, one inside a tool result", `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","data":""}},
			{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{}}]}]}]}`, 2},
		{"an image_url member that is not a part is not an image", `{"messages":[{"role":"user","content":"image_url"}],"image_url":"x"}`, 0},
		{"across messages", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"a"}}]},
			{"role":"user","content":[{"type":"image_url","image_url":{"url":"b"}}]}]}`, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Parse([]byte(c.body), 100)
			require.NoError(t, err)
			require.Equal(t, c.want, r.Images)
		})
	}
}
