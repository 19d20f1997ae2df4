package usage

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func FuzzStream(f *testing.F) {
	for _, fx := range fixtures() {
		f.Add(uint8(fx.api), []byte(fx.body), uint64(len(fx.body)))
	}
	f.Add(uint8(OpenAIChat), []byte("data: [DONE]\r\r\n\n"), uint64(3))
	f.Add(uint8(AnthropicMessages), []byte("event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":\"1e400\",\"output_tokens\":1}}}\n\n"), uint64(9))
	f.Fuzz(func(t *testing.T, api uint8, body []byte, seed uint64) {
		whole := read(API(api), body)
		require.GreaterOrEqual(t, whole.Delta, int64(0))
		for _, n := range []int64{whole.Usage.Input, whole.Usage.Output, whole.Usage.CacheRead, whole.Usage.CacheWrite, whole.Usage.CacheWrite1h, whole.Usage.Reasoning, whole.Usage.Total()} {
			require.GreaterOrEqual(t, n, int64(0))
		}
		requireKindsArePartsOfTheTotal(t, whole.Usage)
		if !whole.HaveUsage {
			require.Equal(t, Usage{}, whole.Usage)
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		require.Equal(t, whole, read(API(api), randomSplit(rng, body)...), "the split must not change the result")
	})
}

func FuzzFromJSON(f *testing.F) {
	f.Add(uint8(OpenAIChat), []byte(`{"usage":{"prompt_tokens":5,"completion_tokens":"7","prompt_tokens_details":{"cached_tokens":2.0}}}`))
	f.Add(uint8(OpenAIResponses), []byte(`{"usage":{"input_tokens":5,"output_tokens":7,"input_tokens_details":{"cached_tokens":1}}}`))
	f.Add(uint8(AnthropicMessages), []byte(`{"usage":{"input_tokens":5,"output_tokens":7,"cache_read_input_tokens":1e12,"cache_creation_input_tokens":1e12}}`))
	f.Add(uint8(OpenAIChat), []byte(`{"usage":{"prompt_tokens":`))
	f.Add(uint8(AnthropicMessages), []byte(`{"usage":{"input_tokens":5,"output_tokens":7,"cache_creation_input_tokens":4,"cache_creation":{"ephemeral_5m_input_tokens":1,"ephemeral_1h_input_tokens":3}}}`))
	f.Add(uint8(OpenAIResponses), []byte(`{"usage":{"input_tokens":5,"output_tokens":7,"output_tokens_details":{"reasoning_tokens":"3"}}}`))
	f.Fuzz(func(t *testing.T, api uint8, body []byte) {
		u, ok := FromJSON(API(api), body)
		if !ok {
			require.Equal(t, Usage{}, u)
			return
		}
		require.True(t, gjson.ValidBytes(body))
		require.GreaterOrEqual(t, u.Output, int64(0))
		require.LessOrEqual(t, u.Output, maxCount)
		require.GreaterOrEqual(t, u.CacheRead, int64(0))
		require.GreaterOrEqual(t, u.CacheWrite, int64(0))
		require.LessOrEqual(t, u.CacheRead+u.CacheWrite, u.Input, "cache counts are parts of the input")
		require.Equal(t, u.Input+u.Output, u.Total())
		requireKindsArePartsOfTheTotal(t, u)
	})
}

// requireKindsArePartsOfTheTotal pins what pricing relies on: every kind is
// non-negative, the parts stay inside their wholes, and the kinds add up to
// exactly the total the token budgets charge.
func requireKindsArePartsOfTheTotal(t *testing.T, u Usage) {
	t.Helper()
	require.LessOrEqual(t, u.CacheWrite1h, max(u.CacheWrite, 0))
	require.LessOrEqual(t, u.Reasoning, max(u.Output, 0))
	k := u.Kinds()
	for _, n := range []int64{k.Input, k.CachedInput, k.CacheWrite, k.CacheWrite1h, k.Output} {
		require.GreaterOrEqual(t, n, int64(0))
	}
	require.Equal(t, u.Total(), k.Input+k.CachedInput+k.CacheWrite+k.CacheWrite1h+k.Output)
}
