package host

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRepeatedInlineRequestHeadersAreJoinedAndOthersKeptAsEnvoysCodecDoes(t *testing.T) {
	for _, tc := range []struct {
		rule    string
		in, out Headers
	}{
		{"authorization is inline: two lines become one comma-joined entry",
			Headers{{"authorization", "Bearer a"}, {"authorization", "Bearer b"}},
			Headers{{"authorization", "Bearer a,Bearer b"}}},
		{"the joined entry keeps the first line's position",
			Headers{{"authorization", "k1"}, {"x-other", "o"}, {"authorization", "k2"}},
			Headers{{"authorization", "k1,k2"}, {"x-other", "o"}}},
		{"x-api-key is not inline: every line stays an entry, in order",
			Headers{{"x-api-key", "k1"}, {"x-api-key", "k2"}, {"x-api-key", "k1"}},
			Headers{{"x-api-key", "k1"}, {"x-api-key", "k2"}, {"x-api-key", "k1"}}},
		{"x-forwarded-for is inline",
			Headers{{"x-forwarded-for", "1.1.1.1"}, {"x-forwarded-for", "2.2.2.2"}},
			Headers{{"x-forwarded-for", "1.1.1.1,2.2.2.2"}}},
		{"an empty repeat adds nothing, an empty first value takes no delimiter",
			Headers{{"authorization", ""}, {"authorization", "k"}, {"authorization", ""}},
			Headers{{"authorization", "k"}}},
		{"a single inline header is unchanged",
			Headers{{"user-agent", "sdk"}},
			Headers{{"user-agent", "sdk"}}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			require.Equal(t, tc.out, JoinRepeatedRequestHeaders(tc.in))
		})
	}
	require.True(t, IsInlineRequestHeader("authorization"))
	require.False(t, IsInlineRequestHeader("x-api-key"))
}
