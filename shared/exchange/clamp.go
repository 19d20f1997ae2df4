package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// clampOutput makes every output ceiling the backend will read a plain
// JSON integer in (0, max]: any other value of a ceiling field is rewritten
// to max (one above max; zero or below, which backends read as "no limit"
// or reject; and every other spelling, a string or fraction some backend
// ignores or reads differently), and when the body names no ceiling field
// the route's own field is added with max, so the backend cannot generate
// past the limit the reservation assumed. wrote reports that some field now
// holds max: the reservation is then max. Parse refused repeated ceiling
// fields, so each field's first copy is its only one.
func clampOutput(api usage.API, body []byte, max int64) (out []byte, wrote bool) {
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
