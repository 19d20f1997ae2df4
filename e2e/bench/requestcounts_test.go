package bench

import (
	"strings"
	"testing"
)

// sixDimensions configures every dimension (global, per_client,
// per_api_key, per_user, per_team, per_model) with %LIMITS%, and gives the
// benchmark's key a user and a team so each dimension has an identity.
const sixDimensions = `{
  "rate_limiting": {
    "limits": {
      "global": %LIMITS%, "per_client": %LIMITS%, "per_api_key": %LIMITS%,
      "per_user": %LIMITS%, "per_team": %LIMITS%, "per_model": { "gpt-4o": %LIMITS% }
    },
    "budget_division": { "replicas": 1 }
  },
  "api_keys": [ { "key": "sk-bench", "id": "bench", "user": "alice", "team": "research" } ]
}`

// tokenLimits and requestLimits never refuse within a benchmark on a
// frozen clock: a token bucket holds 10^12, a request bucket 10^9 requests.
const (
	tokenLimits   = `"tokens_per_minute": 1000000000000, "tokens_per_day": 1000000000000`
	requestLimits = `"requests_per_second": 1000000, "burst_capacity": 1000000000, ` +
		`"requests_per_minute": 1000000000, "requests_per_day": 1000000000`
)

func sixDimensionConfig(limits string) string {
	return strings.ReplaceAll(sixDimensions, "%LIMITS%", "{ "+limits+" }")
}

// BenchmarkRequestCounts is what request-count checks add to a request: the
// same 1 KiB chat request with all six dimensions holding token budgets
// only, then token budgets and requests_per_second/burst,
// requests_per_minute and requests_per_day. `benchstat -col /limits`
// gives the added cost as a ratio.
func BenchmarkRequestCounts(b *testing.B) {
	for _, c := range []struct{ name, limits string }{
		{"tokens", tokenLimits},
		{"tokens+requests", tokenLimits + ", " + requestLimits},
	} {
		b.Run("limits="+c.name, func(b *testing.B) {
			d := newDriver(b, filter, sixDimensionConfig(c.limits))
			e := exchange{key: "sk-bench", body: chatBody(b, 1<<10, false), chunks: [][]byte{chatResponse(256, 20)}}
			runExchanges(b, d, e)
		})
	}
}
