package estimate

import (
	"errors"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
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
	Output             int64  // output ceiling per choice: the largest stated, else the default
	OutputStated       bool   // a ceiling was stated in the body
	Choices            int64  // completions generated when above 1: the largest of n and best_of
	Model              string // top-level "model" when a string
	Stream             bool   // top-level "stream" is true
	StreamIncludeUsage bool   // stream_options.include_usage is true
}

// Hold is what the request reserves: its input estimate plus the output
// ceiling of every choice it asks for, saturating at MaxInput+MaxOutput (a
// request that large is refused by any budget, never under-reserved).
func (r Request) Hold() int64 {
	return r.Input + min(r.Output*max(r.Choices, 1), MaxOutput)
}

// Parse reads what admission reserves from one request body of any of the
// estimated routes (chat completions, completions, Responses, Anthropic
// messages) in one pass over the top-level object. The reservation is the
// input estimate plus Output with no further margin, so Input walks every
// field the backend renders into the prompt; see walk.go. defaultOutput is
// the ceiling when the body states none; it is clamped to [0, MaxOutput].
//
// The body is validated once by jsonx.Parse (so a body nested deeper than
// jsonx.MaxDepth is ErrNotJSON) and is only read, never kept: Model is a
// copy.
func Parse(body []byte, defaultOutput int64) (Request, error) {
	doc := jsonx.Parse(body)
	if doc.Kind != jsonx.Object {
		return Request{}, ErrNotJSON
	}
	var r Request
	var w walker
	choices := int64(0)
	w.add(requestBase)
	// The members are read with a jsonx.Cursor so the messages array is
	// walked as it is read instead of skipped first.
	c := doc.Cursor()
	c.Enter(jsonx.Object)
	for c.Next() {
		key := w.key(c.Key())
		if string(key) == "messages" && c.Kind() == jsonx.Array {
			w.messagesAt(&c)
			continue
		}
		v := c.Value()
		switch string(key) {
		case "model":
			if v.Kind == jsonx.String {
				r.Model = v.Str() // a copy: the body may be rewritten later
			}
		case "stream":
			r.Stream = v.Kind == jsonx.True
		case "stream_options":
			r.StreamIncludeUsage = v.Get("include_usage").Kind == jsonx.True
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			if n, ok := OutputCeiling(v); ok {
				if !r.OutputStated || n > r.Output {
					r.Output = n
				}
				r.OutputStated = true
			}
		case "n", "best_of":
			// The ceiling is per choice: n (and legacy best_of, which
			// generates that many server-side) multiply what one request
			// may generate.
			if c, ok := OutputCeiling(v); ok && c > choices {
				choices = c
			}
			w.field(key, v) // charged as input as before: a token at most
		default:
			w.field(key, v)
		}
	}
	if !r.OutputStated {
		r.Output = min(max(defaultOutput, 0), MaxOutput)
	}
	if choices > 1 {
		r.Choices = min(choices, MaxOutput)
	}
	r.Input = w.total
	return r, nil
}
