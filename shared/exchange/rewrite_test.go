package exchange

import (
	"bytes"
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

// injectBySetMember is the usage injection as the filter made it before
// the one rewrite, kept as the oracle the rewrite must match. It makes a streamed OpenAI chat or completions request ask
// for the final usage chunk, because without stream_options.include_usage the
// backend reports no usage at all and the stream could only settle against
// estimates. It returns the body with stream_options.include_usage set to
// true, keeping every other member and byte, when the body is a JSON object
// with "stream": true and include_usage is not already true; otherwise it
// returns body unchanged and false.
//
// A stream_options that is null is replaced by {"include_usage":true}; one
// that is neither an object nor null is left alone, so the backend rejects the
// malformed request with its own error instead of the filter repairing it.
// Other APIs report usage in every stream and are never rewritten.
//
// The client receives the extra usage chunk (choices: []) it did not ask for;
// the official SDKs accept it.
func injectBySetMember(api usage.API, body []byte) ([]byte, bool) {
	if api != usage.OpenAIChat && api != usage.OpenAICompletions {
		return body, false
	}
	root := jsonx.Parse(body)
	ok := root.Kind == jsonx.Object
	if !ok || root.Get("stream").Kind != jsonx.True {
		return body, false
	}
	// Every edit builds a new buffer; the caller's body is never edited.
	opts := root.Get("stream_options")
	var out []byte
	switch opts.Kind {
	case jsonx.Invalid: // absent
		out = withMemberOracle(body, root.Len() > 0, `"stream_options":{`+includeUsage+`}`)
	case jsonx.Null:
		out, ok = jsonx.SetMember(body, "stream_options", []byte(`{`+includeUsage+`}`))
	case jsonx.Object:
		switch u := opts.Get("include_usage"); u.Kind {
		case jsonx.True:
			return body, false
		case jsonx.Invalid:
			// Rebuild the options object with the member added last and
			// put it back in place of the old one.
			out, ok = jsonx.SetMember(body, "stream_options", withMemberOracle(opts.Raw, opts.Len() > 0, includeUsage))
		default:
			out, ok = jsonx.SetPath(body, []string{"stream_options", "include_usage"}, []byte("true"))
		}
	default:
		return body, false
	}
	if !ok || out == nil {
		return body, false
	}
	return out, true
}

// withMember returns a copy of the JSON object obj (surrounding whitespace
// allowed) with member (`"key":value`) added last: right before the closing
// brace, after any whitespace there, so no other byte moves. nonEmpty says
// whether obj already has members and so needs a comma.
func withMemberOracle(obj []byte, nonEmpty bool, member string) []byte {
	end := bytes.LastIndexByte(obj, '}')
	if end < 0 { // not an object; callers pass only objects
		return nil
	}
	out := make([]byte, 0, len(obj)+len(member)+1)
	out = append(out, obj[:end]...)
	if nonEmpty {
		out = append(out, ',')
	}
	out = append(out, member...)
	return append(out, obj[end:]...)
}

// bySteps is the request rewrite made the old way, edit after edit, each
// on the previous one's output.
func bySteps(api usage.API, body []byte, inject, clamp bool, max int64) (out []byte, injected bool) {
	out = body
	if inject {
		out, injected = injectBySetMember(api, out)
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
	w := newRewrite(body, m)
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
