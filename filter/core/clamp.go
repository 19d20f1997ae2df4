package core

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// clampOutput rewrites every stated output ceiling above max to max, or,
// when none is stated, adds the route's own field so the backend cannot
// generate past the limit the reservation assumed. Parse refused repeated
// ceiling fields, so each field's first copy is its only one.
func clampOutput(api usage.API, body []byte, max int64) []byte {
	limit := jsonx.AppendInt(nil, max)
	stated := false
	for _, f := range estimate.CeilingFields {
		v := jsonx.Parse(body).Get(f)
		if !v.Exists() {
			continue
		}
		stated = true
		if n, ok := v.Float(); ok && n <= float64(max) {
			continue
		}
		if nb, ok := jsonx.SetMember(body, f, limit); ok {
			body = nb
		}
	}
	if stated {
		return body
	}
	field := "max_tokens"
	if api == usage.OpenAIResponses {
		field = "max_output_tokens"
	}
	if nb, ok := jsonx.SetMember(body, field, limit); ok {
		return nb
	}
	return body
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
