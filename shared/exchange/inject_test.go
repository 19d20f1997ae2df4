package exchange

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// injectIncludeUsage is the usage injection alone, as the request path
// makes it: on the members the one parse located, in one copy. A body the
// parse refuses is left as it is (the filter admits it unchanged).
func injectIncludeUsage(api usage.API, body []byte) ([]byte, bool) {
	_, m, err := estimate.ParseMembers(body, 0)
	if err != nil {
		return body, false
	}
	w := newRewrite(body, m)
	if !w.injectUsage(api) {
		return body, false
	}
	out, _ := w.apply()
	return out, true
}

func TestInjectIncludeUsageAsksStreamedOpenAIRequestsForUsage(t *testing.T) {
	tests := []struct {
		name string
		api  usage.API
		body string
		want string // "" means unchanged
	}{
		{"chat stream without options", usage.OpenAIChat,
			`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":true}}`},
		{"completions stream without options", usage.OpenAICompletions,
			`{"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test","stream":true}`,
			`{"model":"gpt-3.5-turbo-instruct","prompt":"Say this is a test","stream":true,"stream_options":{"include_usage":true}}`},
		{"existing options members are kept", usage.OpenAIChat,
			`{"stream":true,"stream_options":{"include_obfuscation":false}}`,
			`{"stream":true,"stream_options":{"include_obfuscation":false,"include_usage":true}}`},
		{"include_usage false is set true", usage.OpenAIChat,
			`{"stream":true,"stream_options":{"include_usage":false,"continuous_usage_stats":true}}`,
			`{"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`},
		{"include_usage as a string is set true", usage.OpenAIChat,
			`{"stream":true,"stream_options":{"include_usage":"true"}}`,
			`{"stream":true,"stream_options":{"include_usage":true}}`},
		{"null options are replaced", usage.OpenAIChat,
			`{"stream":true,"stream_options":null}`,
			`{"stream":true,"stream_options":{"include_usage":true}}`},
		{"whitespace and member order survive", usage.OpenAIChat,
			"{\n  \"stream\": true,\n  \"messages\": []\n}",
			"{\n  \"stream\": true,\n  \"messages\": []\n,\"stream_options\":{\"include_usage\":true}}"},
		{"include_usage already true", usage.OpenAIChat, `{"stream":true,"stream_options":{"include_usage":true}}`, ""},
		{"stream false", usage.OpenAIChat, `{"stream":false,"messages":[]}`, ""},
		{"stream absent", usage.OpenAIChat, `{"messages":[]}`, ""},
		{"stream as a string", usage.OpenAIChat, `{"stream":"true"}`, ""},
		{"malformed options left for the backend to reject", usage.OpenAIChat, `{"stream":true,"stream_options":"yes"}`, ""},
		{"array body", usage.OpenAIChat, `[{"stream":true}]`, ""},
		{"string body", usage.OpenAIChat, `"stream"`, ""},
		{"invalid JSON", usage.OpenAIChat, `{"stream":true,`, ""},
		{"empty body", usage.OpenAIChat, ``, ""},
		{"responses API is never rewritten", usage.OpenAIResponses, `{"stream":true,"input":"hi"}`, ""},
		{"anthropic is never rewritten", usage.AnthropicMessages, `{"stream":true,"messages":[]}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.body)
			orig := append([]byte(nil), in...)
			got, changed := injectIncludeUsage(tt.api, in)
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
		got, changed := injectIncludeUsage(usage.OpenAIChat, []byte(body))
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

func FuzzInjectIncludeUsage(f *testing.F) {
	f.Add(uint8(usage.OpenAIChat), []byte(`{"stream":true,"messages":[]}`))
	f.Add(uint8(usage.OpenAICompletions), []byte(`{"stream":true,"stream_options":{"include_usage":false}}`))
	f.Add(uint8(usage.OpenAIChat), []byte(`{"stream":true,"stream_options":null}`))
	f.Add(uint8(usage.OpenAIChat), []byte(`{"stream":true,"stream_options":{}}`))
	f.Add(uint8(usage.OpenAIChat), []byte(`{"stream":true,"stream\u005foptions":{}}`))
	f.Fuzz(func(t *testing.T, api uint8, body []byte) {
		orig := string(body)
		out, changed := injectIncludeUsage(usage.API(api), body)
		require.Equal(t, orig, string(body), "the input buffer is never edited")
		if !changed {
			require.Equal(t, orig, string(out))
			return
		}
		require.True(t, gjson.ValidBytes(body) && gjson.ParseBytes(body).IsObject())
		require.True(t, gjson.ValidBytes(out), "rewrote %q into invalid %q", body, out)
		require.True(t, gjson.GetBytes(out, "stream").Bool())
		require.Equal(t, gjson.True, gjson.GetBytes(out, "stream_options.include_usage").Type)
	})
}
