package mockllm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInputTokensCountsFourPerMessagePlusWords(t *testing.T) {
	cases := []struct {
		name string
		body string
		want int64
	}{
		{"chat string content", `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there  world"}]}`, 4 + 2 + 4 + 3},
		{"chat content parts", `{"messages":[{"role":"user","content":[{"type":"text","text":"one two"},{"type":"image_url","image_url":{"url":"x"}}]}]}`, 4 + 2},
		{"chat null content", `{"messages":[{"role":"assistant","content":null}]}`, 4},
		{"anthropic system string", `{"system":"you help","messages":[{"role":"user","content":"hi"}]}`, 4 + 2 + 4 + 1},
		{"anthropic system blocks", `{"system":[{"type":"text","text":"a b c"}],"messages":[{"role":"user","content":[{"type":"text","text":"d"}]}]}`, 4 + 3 + 4 + 1},
		{"responses string input with instructions", `{"instructions":"x y","input":"p q r"}`, 4 + 2 + 4 + 3},
		{"responses item list", `{"input":[{"role":"user","content":"a b"},{"role":"user","content":[{"type":"input_text","text":"c"}]}]}`, 4 + 2 + 4 + 1},
		{"completions prompt string", `{"prompt":"say this is a test"}`, 4 + 5},
		{"completions prompt array", `{"prompt":["a","b c"]}`, 4 + 1 + 4 + 2},
		{"no messages", `{"model":"m"}`, 0},
		{"invalid json", `{"messages":[`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, InputTokens([]byte(tc.body)))
		})
	}
}

func TestOutputCeilingTakesLargestOfAnySpelling(t *testing.T) {
	cases := []struct {
		body string
		want int64
	}{
		{`{"max_tokens":100}`, 100},
		{`{"max_tokens":100.0}`, 100},
		{`{"max_tokens":1e2}`, 100},
		{`{"max_tokens":"100"}`, 100},
		{`{"max_completion_tokens":50,"max_tokens":70}`, 70},
		{`{"max_output_tokens":30}`, 30},
		{`{"max_tokens":null}`, 0},
		{`{"max_tokens":-5}`, 0},
		{`{}`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.body, func(t *testing.T) {
			require.Equal(t, tc.want, OutputCeiling([]byte(tc.body)))
		})
	}
}

func TestDeltasConcatenateToAnswerText(t *testing.T) {
	for _, per := range []int64{1, 2, 3, 7} {
		var b strings.Builder
		const n = 10
		for from := int64(0); from < n; from += per {
			b.WriteString(deltaText(from, min(per, n-from)))
		}
		require.Equal(t, answerText(n), b.String(), "per chunk %d", per)
		require.Len(t, strings.Fields(b.String()), n)
	}
	require.Empty(t, answerText(0))
}
