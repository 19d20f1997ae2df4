package exchange

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// clampBody is the clamp alone, as the request path runs it: on the
// members the one parse located.
func clampBody(t testing.TB, api usage.API, body []byte, max int64) ([]byte, bool) {
	_, m, err := estimate.ParseMembers(body, 0)
	require.NoError(t, err)
	w := newRewrite(body, m)
	wrote := w.clampOutput(api, max)
	out, _ := w.apply()
	return out, wrote
}

// After the clamp, every ceiling the backend reads is a plain integer in
// (0, limit]; a body whose ceilings already are is forwarded byte for byte.
func TestTheClampLeavesOnlyPlainCeilingsWithinTheLimit(t *testing.T) {
	for _, tc := range []struct {
		api        usage.API
		body, want string
		wrote      bool
	}{
		{usage.OpenAIChat, `{"max_tokens":100}`, `{"max_tokens":100}`, false},
		{usage.OpenAIChat, `{"max_tokens":1000}`, `{"max_tokens":1000}`, false},
		{usage.OpenAIChat, `{"max_tokens":1001}`, `{"max_tokens":1000}`, true},
		{usage.OpenAIChat, `{"max_tokens":0}`, `{"max_tokens":1000}`, true},
		{usage.OpenAIChat, `{"max_tokens":-7}`, `{"max_tokens":1000}`, true},
		{usage.OpenAIChat, `{"max_tokens":"100"}`, `{"max_tokens":1000}`, true},
		{usage.OpenAIChat, `{"max_tokens":100.5}`, `{"max_tokens":1000}`, true},
		{usage.OpenAIChat, `{"max_tokens":null}`, `{"max_tokens":1000}`, true},
		{usage.OpenAIChat, `{"max_tokens":0,"max_completion_tokens":50}`, `{"max_tokens":1000,"max_completion_tokens":50}`, true},
		{usage.OpenAIChat, `{"max_completion_tokens":5000}`, `{"max_completion_tokens":1000}`, true},
		{usage.OpenAIChat, `{"max\u005ftokens":0}`, `{"max\u005ftokens":1000}`, true},
		{usage.OpenAIChat, `{"model":"m"}`, `{"model":"m","max_tokens":1000}`, true},
		{usage.OpenAICompletions, `{}`, `{"max_tokens":1000}`, true},
		{usage.AnthropicMessages, `{"messages":[]}`, `{"messages":[],"max_tokens":1000}`, true},
		{usage.OpenAIResponses, `{"input":"x"}`, `{"input":"x","max_output_tokens":1000}`, true},
		{usage.OpenAIResponses, `{"input":"x","max_output_tokens":0}`, `{"input":"x","max_output_tokens":1000}`, true},
	} {
		out, wrote := clampBody(t, tc.api, []byte(tc.body), 1000)
		require.Equal(t, tc.want, string(out), tc.body)
		require.Equal(t, tc.wrote, wrote, tc.body)
	}
}
