package usage

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInjectIncludeUsageAsksStreamedOpenAIRequestsForUsage(t *testing.T) {
	tests := []struct {
		name string
		api  API
		body string
		want string // "" means unchanged
	}{
		{"chat stream without options", OpenAIChat,
			`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`},
		{"completions stream without options", OpenAICompletions,
			`{"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test","stream":true}`,
			`{"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test","stream":true,"stream_options":{"include_usage":true}}`},
		{"existing options members are kept", OpenAIChat,
			`{"stream":true,"stream_options":{"include_obfuscation":false}}`,
			`{"stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true}}`},
		{"include_usage false is set true", OpenAIChat,
			`{"stream":true,"stream_options":{"include_usage":false,"continuous_usage_stats":true}}`,
			`{"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"include_usage as a string is set true", OpenAIChat,
			`{"stream":true,"stream_options":{"include_usage":"true"}}`,
			`{"stream":true,"stream_options":{"include_usage":true}}`},
		{"null options are replaced", OpenAIChat,
			`{"stream":true,"stream_options":null}`,
			`{"stream":true,"stream_options":{"include_usage":true}}`},
		{"whitespace and member order survive", OpenAIChat,
			"{\n  \"stream\": true,\n  \"messages\": []\n}",
			"{\n  \"stream\": true,\n  \"messages\": []\n,\"stream_options\":{\"include_usage\":true}}"},
		{"include_usage already true", OpenAIChat, `{"stream":true,"stream_options":{"include_usage":true}}`, ""},
		{"stream false", OpenAIChat, `{"stream":false,"messages":[]}`, ""},
		{"stream absent", OpenAIChat, `{"messages":[]}`, ""},
		{"stream as a string", OpenAIChat, `{"stream":"true"}`, ""},
		{"malformed options left for the backend to reject", OpenAIChat, `{"stream":true,"stream_options":"yes"}`, ""},
		{"array body", OpenAIChat, `[{"stream":true}]`, ""},
		{"string body", OpenAIChat, `"stream"`, ""},
		{"invalid JSON", OpenAIChat, `{"stream":true,`, ""},
		{"empty body", OpenAIChat, ``, ""},
		{"responses API is never rewritten", OpenAIResponses, `{"stream":true,"input":"hi"}`, ""},
		{"anthropic is never rewritten", AnthropicMessages, `{"stream":true,"messages":[]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.body)
			orig := append([]byte(nil), in...)
			got, changed := InjectIncludeUsage(tt.api, in)
			require.Equal(t, string(orig), string(in), "the caller's buffer is never edited")
			if tt.want == "" {
				require.False(t, changed)
				require.Equal(t, tt.body, string(got))
				return
			}
			require.True(t, changed)
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestInjectIncludeUsageKeepsEveryOtherMemberOfTheRequest(t *testing.T) {
	bodies := []string{
		`{"model":"gpt-4o","stream":true,"temperature":0.7,"max_tokens":32000.0,"messages":[{"role":"system","content":"Be terse. \u00e9\n"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{}}}}]}`,
		`{"stream":true,"stream_options":{"include_usage":false,"x":[1,{"y":null}]},"n":2,"big":12345678901234567890}`,
		`{"stream":true,"stream_options":null,"user":"u-1"}`,
	}
	for _, body := range bodies {
		got, changed := InjectIncludeUsage(OpenAIChat, []byte(body))
		require.True(t, changed)

		var want, have map[string]any
		dec := func(b []byte, v *map[string]any) {
			d := json.NewDecoder(bytes.NewReader(b))
			d.UseNumber()
			require.NoError(t, d.Decode(v))
		}
		dec([]byte(body), &want)
		dec(got, &have)
		opts, _ := want["stream_options"].(map[string]any)
		if opts == nil {
			opts = map[string]any{}
		}
		opts["include_usage"] = true
		want["stream_options"] = opts
		require.Equal(t, want, have)
	}
}
