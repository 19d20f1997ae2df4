package estimate

import (
	"errors"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// ErrNotJSON reports a body that is not one JSON object. Admission admits
// such a request unchanged: the route's own handler owns body validation.
var ErrNotJSON = errors.New("estimate: request body is not a JSON object")

// MaxInput caps the input estimate so sums across dimensions and periods
// cannot overflow int64, far above any body an Envoy buffer holds.
const MaxInput int64 = 1 << 32

// Request is what admission needs from a request body.
type Request struct {
	Input              int64  // estimated input tokens; an over-count by construction
	Output             int64  // output ceiling: the largest stated, else the default
	OutputStated       bool   // a ceiling was stated in the body
	Model              string // top-level "model" when a string
	Stream             bool   // top-level "stream" is true
	StreamIncludeUsage bool   // stream_options.include_usage is true
}

// Parse reads what admission reserves from one request body of any of the
// estimated routes (chat completions, completions, Responses, Anthropic
// messages) in one pass over the top-level object. The reservation is the
// input estimate plus Output with no further margin, so Input walks every
// field the backend renders into the prompt; see walk.go. defaultOutput is
// the ceiling when the body states none; it is clamped to [0, MaxOutput].
func Parse(body []byte, defaultOutput int64) (Request, error) {
	if !isObject(body) {
		return Request{}, ErrNotJSON
	}
	// gjson takes a string; the body is not modified while it is read, and
	// nothing read from it outlives this call except the cloned model.
	json := unsafe.String(unsafe.SliceData(body), len(body))
	var r Request
	var w walker
	w.add(requestBase)
	gjson.Parse(json).ForEach(func(key, v gjson.Result) bool {
		switch key.Str {
		case "model":
			if v.Type == gjson.String {
				r.Model = strings.Clone(v.Str)
			}
		case "stream":
			r.Stream = v.Type == gjson.True
		case "stream_options":
			r.StreamIncludeUsage = v.Get("include_usage").Type == gjson.True
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			if n, ok := OutputCeiling(v); ok {
				if !r.OutputStated || n > r.Output {
					r.Output = n
				}
				r.OutputStated = true
			}
		default:
			w.field(key.Str, v)
		}
		return true
	})
	if !r.OutputStated {
		r.Output = min(max(defaultOutput, 0), MaxOutput)
	}
	r.Input = w.total
	return r, nil
}

// isObject validates the body and checks that it is an object, so a bare
// string or array never reaches the walk.
func isObject(body []byte) bool {
	for _, c := range body {
		if byteClass[c] == clsSpace {
			continue
		}
		return c == '{' && gjson.ValidBytes(body)
	}
	return false
}
