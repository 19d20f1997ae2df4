package exchange

import (
	"bytes"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// rewrite collects the edits the rules make to a request body, located by
// the one parse (estimate.ParseMembers), and applies them in one copy:
// the usage injection and the output clamp never parse the body again.
// Every byte not edited is forwarded as the client sent it.
type rewrite struct {
	body    []byte
	members estimate.Members
	edits   []edit
	// tail is where the injection appended stream_options (-1: it did
	// not): a member added later goes after it, as it would in the
	// injected body.
	tail int
}

// edit replaces body[at:end] with text (at == end inserts).
type edit struct {
	at, end int
	text    []byte
}

func newRewrite(body []byte, m estimate.Members) rewrite {
	return rewrite{body: body, members: m, tail: -1}
}

func (w *rewrite) add(at, end int, text []byte) {
	w.edits = append(w.edits, edit{at: at, end: end, text: text})
}

// apply returns the body with every edit made; false when there is none.
func (w *rewrite) apply() ([]byte, bool) {
	if len(w.edits) == 0 {
		return w.body, false
	}
	// Members do not overlap; insertions at one place keep their order
	// (an insertion sort: there are at most four edits).
	for i := 1; i < len(w.edits); i++ {
		for j := i; j > 0 && w.edits[j].at < w.edits[j-1].at; j-- {
			w.edits[j], w.edits[j-1] = w.edits[j-1], w.edits[j]
		}
	}
	n := len(w.body)
	for _, e := range w.edits {
		n += len(e.text) - (e.end - e.at)
	}
	out := make([]byte, 0, n)
	last := 0
	for _, e := range w.edits {
		out = append(out, w.body[last:e.at]...)
		out = append(out, e.text...)
		last = e.end
	}
	return append(out, w.body[last:]...), true
}

// includeUsage is the stream_options member the injection sets.
const includeUsage = `"include_usage":true`

// injectUsage makes a streamed OpenAI chat or completions request ask for
// the final usage chunk (stream_options.include_usage true), because
// without it the backend reports no usage at all and the stream could only
// settle on estimates. It edits only a body whose "stream" is true and
// whose include_usage is not already true: a stream_options that is null
// becomes {"include_usage":true}, one that is neither an object nor null is
// left alone, so the backend rejects the malformed request with its own
// error instead of the filter repairing it. Other APIs report usage in
// every stream and are never edited. It reports whether it edited.
func (w *rewrite) injectUsage(api usage.API) bool {
	if !injectsUsage(api) {
		return false
	}
	b, m := w.body, &w.members
	if s, ok := m.Exact("stream"); !ok || string(b[s.Start:s.End]) != "true" {
		return false
	}
	o, ok := m.Exact("stream_options")
	if !ok {
		// Appended last: before the closing brace, after any whitespace
		// there, so no other byte moves.
		w.tail = bytes.LastIndexByte(b, '}')
		w.add(w.tail, w.tail, member(!m.Empty, `"stream_options":{`+includeUsage+`}`))
		return true
	}
	switch b[o.Start] {
	case 'n':
		w.add(o.Start, o.End, []byte(`{`+includeUsage+`}`))
		return true
	case '{':
	default:
		return false
	}
	opts := jsonx.Value{Kind: jsonx.Object, Raw: b[o.Start:o.End]}
	c := opts.Cursor()
	c.Enter(jsonx.Object)
	for c.Next() {
		name := c.Name()
		v := c.Value()
		if name != "include_usage" {
			continue
		}
		if v.Kind == jsonx.True {
			return false
		}
		end := o.Start + c.Offset()
		w.add(end-len(v.Raw), end, []byte("true"))
		return true
	}
	end := o.Start + bytes.LastIndexByte(opts.Raw, '}')
	w.add(end, end, member(opts.Len() > 0, includeUsage))
	return true
}

// member is `"key":value` text, after a comma when the object has members.
func member(comma bool, text string) []byte {
	out := make([]byte, 0, len(text)+1)
	if comma {
		out = append(out, ',')
	}
	return append(out, text...)
}

// clampOutput makes every output ceiling the backend will read a plain
// JSON integer in (0, max]: any other value of a ceiling field is rewritten
// to max (one above max; zero or below, which backends read as "no limit"
// or reject; and every other spelling, a string or fraction some backend
// ignores or reads differently), and when the body names no ceiling field
// the route's own field is added with max, so the backend cannot generate
// past the limit the reservation assumed. wrote reports that some field now
// holds max: the reservation is then max. The parse refused repeated
// ceiling fields, so each field's copy is its only one.
func (w *rewrite) clampOutput(api usage.API, max int64) (wrote bool) {
	limit := jsonx.AppendInt(nil, max)
	named := false
	for _, f := range estimate.CeilingFields {
		s, ok := w.members.Exact(f)
		if !ok {
			continue
		}
		named = true
		if plainCeiling(w.body[s.Start:s.End], max) {
			continue
		}
		w.add(s.Start, s.End, limit)
		wrote = true
	}
	if named {
		return wrote
	}
	at, comma := w.members.Append, !w.members.Empty
	if w.tail >= 0 {
		at, comma = w.tail, true
	}
	text := append(member(comma, `"`+ceilingField(api)+`":`), limit...)
	w.add(at, at, text)
	return true
}

// plainCeiling says raw is a JSON integer in (0, max].
func plainCeiling(raw []byte, max int64) bool {
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return false
	}
	n, ok := jsonx.Value{Kind: jsonx.Number, Raw: raw}.Int()
	return ok && n > 0 && n <= max
}

// ceilingField is the output-ceiling member a route's API documents:
// max_output_tokens for Responses, max_tokens for the others (chat
// completions accept it beside max_completion_tokens, and OpenAI-compatible
// servers read it).
func ceilingField(api usage.API) string {
	if api == usage.OpenAIResponses {
		return "max_output_tokens"
	}
	return "max_tokens"
}
