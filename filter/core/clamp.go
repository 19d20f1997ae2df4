package core

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// outputFields are the request fields that state an output ceiling.
var outputFields = [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"}

// clampOutput rewrites every stated output ceiling above max to max, or,
// when none is stated, adds the route's own field so the backend cannot
// generate past the limit the reservation assumed.
func clampOutput(api usage.API, body []byte, max int64) []byte {
	limit := jsonx.AppendInt(nil, max)
	stated := false
	for _, f := range outputFields {
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

// repeatsOutputField reports a body that names one output-ceiling field
// twice at the top level. Names are compared decoded: "max\u005ftokens" is
// max_tokens to every backend.
func repeatsOutputField(body []byte) bool {
	var seen [len(outputFields)]int
	repeated := false
	jsonx.Parse(body).Members(func(key string, _ jsonx.Value) bool {
		for i, f := range outputFields {
			if key == f {
				seen[i]++
				repeated = repeated || seen[i] > 1
			}
		}
		return !repeated
	})
	return repeated
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
