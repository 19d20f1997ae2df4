package usage

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/sse"
)

// The counting walk tells the usage-only chunk exactly as the dropper's
// predicate does, so the one walk can stand for both.
func TestTheCountingWalkTellsTheUsageOnlyChunkLikeThePredicate(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		`{"choices":[],"usage":{"prompt_tokens":1}}`,
		`{"choices":[{"delta":{}}],"usage":{"prompt_tokens":1}}`,
		`{"choices":[],"usage":null}`,
		`[DONE]`,
		`{"choices":[]}`,
		`{"choices":{},"usage":{}}`,
		`{"choices":[],"choices":[1],"usage":{}}`,
		`{"usage":null,"usage":{},"choices":[]}`,
		`not json`,
		`{"choices":[ ],"usage":{"total_tokens":3},"model":"gpt-4o"}`,
	} {
		s := NewStream(OpenAIChat, countBytes)
		require.Equal(t, sse.IsOpenAIUsageOnlyChunk([]byte(data)), s.Event(nil, []byte(data)), data)
	}
}

func FuzzTheCountingWalkTellsTheUsageOnlyChunkLikeThePredicate(f *testing.F) {
	f.Add([]byte(`{"choices":[],"usage":{"prompt_tokens":1}}`))
	f.Add([]byte(`{"choices":[{"delta":{"content":"x"}}],"usage":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, api := range []API{OpenAIChat, OpenAICompletions} {
			s := NewStream(api, countBytes)
			require.Equal(t, sse.IsOpenAIUsageOnlyChunk(data), s.Event(nil, data), "%s", data)
		}
	})
}
