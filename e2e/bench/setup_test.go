package bench

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// These tests pin that the benchmarks measure what they claim: the bodies
// have their nominal size and are valid requests, and the filter admits,
// reserves and settles each benchmark request instead of refusing it or
// waving it through.

func TestChatBodiesHaveTheirNominalSizeAndAreValidRequests(t *testing.T) {
	for _, bs := range bodySizes {
		for _, stream := range []bool{false, true} {
			b := chatBody(t, bs.size, stream)
			require.Len(t, b, bs.size)
			var r struct {
				Model    string           `json:"model"`
				Stream   bool             `json:"stream"`
				Messages []map[string]any `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(b, &r))
			require.Equal(t, "gpt-4o", r.Model)
			require.Equal(t, stream, r.Stream)
			require.NotEmpty(t, r.Messages)
		}
	}
}

func TestStreamChunksAreAboutAHundredBytes(t *testing.T) {
	chunks := streamChunks(10)
	require.Len(t, chunks, 11)
	for _, c := range chunks[:10] {
		require.InDelta(t, 100, len(c), 20)
	}
}

func atoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err, "not a number: %q", s)
	return n
}

// The per-key budget shows the whole path: the first request's reservation
// is returned and the reported usage charged, so the same request admitted
// next sees exactly the usage gone.
func TestTheBenchmarkRequestIsReservedAndSettledAgainstUsage(t *testing.T) {
	for _, bs := range bodySizes {
		t.Run(bs.name, func(t *testing.T) {
			d := newDriver(t, filter, budgetConfig)
			const prompt, completion = 100, 20
			e := exchange{key: "sk-bench", body: chatBody(t, bs.size, false),
				chunks: [][]byte{chatResponse(prompt, completion)}}
			first, second := d.doOnce(e), d.doOnce(e)
			require.Equal(t, "1000000000000", first.header("x-ratelimit-tokens-limit"))
			reserved := atoi(t, first.header("x-ratelimit-tokens-limit")) - atoi(t, first.header("x-ratelimit-tokens-remaining"))
			require.Greater(t, reserved, int64(bs.size/8), "the estimate must have read the body")
			require.Equal(t, int64(prompt+completion),
				atoi(t, first.header("x-ratelimit-tokens-remaining"))-atoi(t, second.header("x-ratelimit-tokens-remaining")))
		})
	}
}

func TestTheStreamedBenchmarkRequestIsSettledFromTheLastChunk(t *testing.T) {
	d := newDriver(t, filter, budgetConfig)
	e := exchange{key: "sk-bench", body: chatBody(t, 1<<10, true), contentType: "text/event-stream",
		chunks: streamChunks(streamedChunks)}
	first, second := d.doOnce(e), d.doOnce(e)
	require.Equal(t, streamedChunks, strings.Count(string(first.body), `"content":"word "`), "every event reaches the client")
	require.True(t, strings.HasSuffix(string(first.body), "data: [DONE]\n\n"))
	require.Equal(t, int64(10+streamedChunks),
		atoi(t, first.header("x-ratelimit-tokens-remaining"))-atoi(t, second.header("x-ratelimit-tokens-remaining")))
}

func TestRequestCountLimitsApplyOnlyInTheirConfiguration(t *testing.T) {
	e := exchange{key: "sk-bench", body: chatBody(t, 1<<10, false), chunks: [][]byte{chatResponse(100, 20)}}
	tokens := newDriver(t, filter, sixDimensionConfig(tokenLimits)).doOnce(e)
	both := newDriver(t, filter, sixDimensionConfig(tokenLimits+", "+requestLimits)).doOnce(e)
	require.NotEmpty(t, tokens.header("x-ratelimit-tokens-limit"))
	require.Empty(t, tokens.header("x-ratelimit-requests-minute-limit"))
	require.Equal(t, "1000000000", both.header("x-ratelimit-requests-minute-limit"))
	require.Equal(t, "1000000000", both.header("x-ratelimit-requests-day-limit"))
	require.Equal(t, "1000000000", both.header("x-ratelimit-limit"))
}
