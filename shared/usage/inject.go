package usage

import (
	"bytes"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// includeUsage is the stream_options member the rewrite adds.
const includeUsage = `"include_usage":true`

// InjectIncludeUsage makes a streamed OpenAI chat or completions request ask
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
func InjectIncludeUsage(api API, body []byte) ([]byte, bool) {
	if api != OpenAIChat && api != OpenAICompletions {
		return body, false
	}
	root, ok := object(body)
	if !ok || root.Get("stream").Kind != jsonx.True {
		return body, false
	}
	// Every edit builds a new buffer; the caller's body is never edited.
	opts := root.Get("stream_options")
	var out []byte
	switch opts.Kind {
	case jsonx.Invalid: // absent
		out = withMember(body, root.Len() > 0, `"stream_options":{`+includeUsage+`}`)
	case jsonx.Null:
		out, ok = jsonx.SetMember(body, "stream_options", []byte(`{`+includeUsage+`}`))
	case jsonx.Object:
		switch u := opts.Get("include_usage"); u.Kind {
		case jsonx.True:
			return body, false
		case jsonx.Invalid:
			// Rebuild the options object with the member added last and
			// put it back in place of the old one.
			out, ok = jsonx.SetMember(body, "stream_options", withMember(opts.Raw, opts.Len() > 0, includeUsage))
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
func withMember(obj []byte, nonEmpty bool, member string) []byte {
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
