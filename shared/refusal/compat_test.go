package refusal

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

func TestDurationIsSpelledAsOpenAIResetHeadersAre(t *testing.T) {
	t.Parallel()
	for sec, want := range map[int64]string{-5: "0s", 0: "0s", 1: "1s", 45: "45s", 60: "1m0s", 360: "6m0s",
		3599: "59m59s", 3600: "1h0m0s", 86400: "24h0m0s", 3723: "1h2m3s"} {
		require.Equal(t, want, Duration(sec), "%d s", sec)
	}
}

func TestCompatHeadersDescribeOnlyTheCallersOwnBuckets(t *testing.T) {
	const now = 1_800_000_000
	levels := []limit.OpLevel{
		{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 9e6, Remaining: 8e6, ResetUnix: now + 9}},
		{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodSecond, Level: limit.Level{Capacity: 5, Remaining: 4, ResetUnix: now + 1}},
		{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 100, Remaining: 99, ResetUnix: now + 1}},
		{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute, Level: limit.Level{Capacity: 20000, Remaining: 15000, ResetUnix: now + 360}},
		{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodDay, Level: limit.Level{Capacity: 1e6, Remaining: -3, ResetUnix: now + 86400}},
	}
	t.Run("none asked", func(t *testing.T) {
		require.Empty(t, AppendCompatHeaders(nil, levels, Styles{}, now))
	})
	t.Run("openai", func(t *testing.T) {
		require.Equal(t, []Header{
			{"x-ratelimit-limit-tokens", "20000"}, {"x-ratelimit-remaining-tokens", "15000"}, {"x-ratelimit-reset-tokens", "6m0s"},
			{"x-ratelimit-limit-requests", "100"}, {"x-ratelimit-remaining-requests", "99"}, {"x-ratelimit-reset-requests", "1s"},
		}, AppendCompatHeaders(nil, levels, Styles{OpenAI: true}, now))
	})
	t.Run("ietf", func(t *testing.T) {
		require.Equal(t, []Header{
			{"ratelimit-policy", `"requests-second";q=5;w=1, "requests-minute";q=100;w=60, "tokens-minute";q=20000;w=60, "tokens-day";q=1000000;w=86400`},
			{"ratelimit", `"requests-second";r=4;t=1, "requests-minute";r=99;t=1, "tokens-minute";r=15000;t=360, "tokens-day";r=0;t=86400`},
		}, AppendCompatHeaders(nil, levels, Styles{IETF: true}, now))
	})
	t.Run("no own bucket, no header", func(t *testing.T) {
		require.Empty(t, AppendCompatHeaders(nil, levels[:1], Styles{OpenAI: true, IETF: true}, now))
	})
}
