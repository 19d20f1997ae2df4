package usage

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRouteMatchesOnlyTheChargedTextGenerationPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want API
		ok   bool
	}{
		{"/v1/chat/completions", OpenAIChat, true},
		{"/v1/completions", OpenAICompletions, true},
		{"/v1/responses", OpenAIResponses, true},
		{"/v1/responses/compact", OpenAIResponses, true},
		{"/v1/messages", AnthropicMessages, true},
		{"/anthropic/v1/messages", AnthropicMessages, true},
		{"/v1/chat/completions?api-version=2024-10-21", OpenAIChat, true},
		{"/v1/messages?beta=true#frag", AnthropicMessages, true},
		{"/v1/responses#x?y", OpenAIResponses, true},
		{"/v1/chat/completions/", OpenAIChat, true},
		{"/v1/chat/completions//?x=1", OpenAIChat, true},
		{"/v1/messages/count_tokens", 0, false},
		{"/v1/responses/resp_123", 0, false},
		{"/v1/responses/resp_123/input_items", 0, false},
		{"/v1/embeddings", 0, false},
		// Spellings a common backend serves as the same route are metered.
		{"/V1/CHAT/COMPLETIONS", OpenAIChat, true},
		{"/v1/chat%2Fcompletions", OpenAIChat, true},
		{"/v1/%63hat/completions", OpenAIChat, true},
		{"/%761/messages", AnthropicMessages, true},
		{"/v1/chat/completions;jsessionid=1", OpenAIChat, true},
		{"/v1;x/chat;y/completions", OpenAIChat, true},
		{"//v1//chat/completions", OpenAIChat, true},
		{"/v1/./chat/completions", OpenAIChat, true},
		{"/v1/x/../chat/completions", OpenAIChat, true},
		{"/v1/responses/%2e%2e/responses/compact", OpenAIResponses, true},
		{"/v1/chat/completions%3Fx", 0, false},
		{"/v1/chat/completions%", 0, false},
		{"/v1/chat/completions%zz", 0, false},
		{"/v1/messages/../../v1/messages/count_tokens", 0, false},
		{"/" + strings.Repeat("a/", 100) + "../../v1/messages", 0, false},
		{"/" + strings.Repeat("a", 1000) + "/../v1/messages", AnthropicMessages, true},
		{"/" + strings.Repeat("a", 5000) + "/../v1/messages", 0, false},
		{"/v1/chat/completionsx", 0, false},
		{"v1/chat/completions", 0, false},
		{"/x/v1/chat/completions", 0, false},
		{"/", 0, false},
		{"", 0, false},
		{"?/v1/messages", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, ok := Route(tt.path)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAPINamesAreDistinctAndTheZeroAPIIsNone(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, a := range []API{OpenAIChat, OpenAICompletions, OpenAIResponses, AnthropicMessages} {
		require.NotEqual(t, "none", a.String())
		require.False(t, seen[a.String()])
		seen[a.String()] = true
	}
	require.Equal(t, "none", API(0).String())
}

func FuzzRouteNeverPanics(f *testing.F) {
	f.Add("/v1/chat%2Fcompletions;x?y#z")
	f.Add("/%")
	f.Add("/../..")
	f.Fuzz(func(t *testing.T, path string) {
		if api, ok := Route(path); ok {
			require.NotEqual(t, API(0), api)
		}
	})
}

// Route matches a canonically spelled route without building its canonical
// form; that shortcut is right only because every route in the table is its
// own canonical form.
func TestEveryRouteIsItsOwnCanonicalForm(t *testing.T) {
	t.Parallel()
	for _, r := range []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/responses/compact",
		"/v1/messages", "/anthropic/v1/messages"} {
		var buf [64]byte
		require.Equal(t, r, canonicalPath(buf[:0], r))
		api, ok := routeOf(r)
		require.True(t, ok, r)
		got, ok := Route(r)
		require.True(t, ok, r)
		require.Equal(t, api, got, r)
	}
}
