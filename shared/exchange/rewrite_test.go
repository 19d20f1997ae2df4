package exchange

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// clampBySetMember is the clamp as the filter made it before the one
// rewrite: a parse, then one SetMember (each a parse and a copy) per field.
// It is the oracle the one rewrite must match byte for byte.
func clampBySetMember(api usage.API, body []byte, max int64) (out []byte, wrote bool) {
	limit := jsonx.AppendInt(nil, max)
	named := false
	doc := jsonx.Parse(body)
	for _, f := range estimate.CeilingFields {
		v := doc.Get(f)
		if !v.Exists() {
			continue
		}
		named = true
		if n, ok := v.Int(); ok && v.Kind == jsonx.Number && n > 0 && n <= max {
			continue
		}
		if nb, ok := jsonx.SetMember(body, f, limit); ok {
			body, wrote = nb, true
		}
	}
	if named {
		return body, wrote
	}
	if nb, ok := jsonx.SetMember(body, ceilingField(api), limit); ok {
		return nb, true
	}
	return body, false
}

// bySteps is the request rewrite made the old way, edit after edit, each
// on the previous one's output.
func bySteps(api usage.API, body []byte, inject, clamp bool, max int64) (out []byte, injected bool) {
	out = body
	if inject {
		out, injected = usage.InjectIncludeUsage(api, out)
	}
	if clamp {
		out, _ = clampBySetMember(api, out, max)
	}
	return out, injected
}

// inOnePass is the rewrite as the exchange makes it.
func inOnePass(api usage.API, body []byte, inject, clamp bool, max int64) (out []byte, injected bool, ok bool) {
	_, m, err := estimate.ParseMembers(body, 0)
	if err != nil {
		return nil, false, false
	}
	w := newRewrite(body, &m)
	if inject {
		injected = w.injectUsage(api)
	}
	if clamp {
		w.clampOutput(api, max)
	}
	out, _ = w.apply()
	return out, injected, true
}

var rewriteBodies = []string{
	`{"model":"m","stream":true,"messages":[]}`,
	`{"model":"m","stream":true,"max_tokens":5000,"messages":[]}`,
	`{ "stream" : true , "stream_options" : null , "max_tokens" : 0 }`,
	"{\n  \"stream\": true,\n  \"stream_options\": {}\n}\n",
	`{"stream":true,"stream_options":{"x":1}}`,
	`{"stream":true,"stream_options":{"include_usage":false,"x":1},"max_completion_tokens":"9"}`,
	`{"stream":true,"stream_options":{"include_usage":true}}`,
	`{"stream":true,"stream_options":[]}`,
	`{"Stream":true,"max_output_tokens":3}`,
	`{"stream":false}`,
	`{}`,
	` {  } `,
	`{"str\u0065am":true,"max\u005ftokens":1e3}`,
	`{"stream":true,"stream_options":{"include\u005fusage":0}}`,
}

// The one rewrite makes exactly the body the edits made one after the
// other did, for every combination of injection and clamp.
func TestTheOneRewriteMakesWhatTheEditsMadeInTurn(t *testing.T) {
	for _, body := range rewriteBodies {
		for _, api := range []usage.API{usage.OpenAIChat, usage.OpenAIResponses, usage.AnthropicMessages} {
			for _, mode := range [][2]bool{{true, false}, {false, true}, {true, true}} {
				want, wantInjected := bySteps(api, []byte(body), mode[0], mode[1], 1000)
				got, injected, ok := inOnePass(api, []byte(body), mode[0], mode[1], 1000)
				require.True(t, ok, body)
				require.Equal(t, string(want), string(got), "%s api %d mode %v", body, api, mode)
				require.Equal(t, wantInjected, injected, body)
			}
		}
	}
}

func FuzzTheOneRewriteMakesWhatTheEditsMadeInTurn(f *testing.F) {
	for _, b := range rewriteBodies {
		f.Add([]byte(b), uint8(3), int64(1000))
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8, max int64) {
		if max <= 0 {
			max = 1
		}
		api := []usage.API{usage.OpenAIChat, usage.OpenAICompletions, usage.OpenAIResponses, usage.AnthropicMessages}[mode>>2&3]
		inject, clamp := mode&1 != 0, mode&2 != 0
		got, injected, ok := inOnePass(api, body, inject, clamp, max)
		if !ok {
			return // the filter admits a body it cannot parse unchanged
		}
		want, wantInjected := bySteps(api, body, inject, clamp, max)
		require.Equal(t, string(want), string(got))
		require.Equal(t, wantInjected, injected)
	})
}
