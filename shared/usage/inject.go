package usage

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

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
	root, ok := object(bytesString(body))
	if !ok || root.Get("stream").Type != gjson.True {
		return body, false
	}
	// sjson builds a new buffer; the caller's body is never edited.
	opts := root.Get("stream_options")
	switch {
	case !opts.Exists(), opts.Type == gjson.Null:
		// Replace a null in place; add the member when absent.
		out, err := sjson.SetRawBytes(body, "stream_options", []byte(`{"include_usage":true}`))
		if err != nil {
			return body, false
		}
		return out, true
	case opts.IsObject():
		if opts.Get("include_usage").Type == gjson.True {
			return body, false
		}
		out, err := sjson.SetRawBytes(body, "stream_options.include_usage", []byte("true"))
		if err != nil {
			return body, false
		}
		return out, true
	}
	return body, false
}
