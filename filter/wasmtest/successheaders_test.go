package wasmtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// The success headers follow the backend's own, which reach the client in
// their order, whether the response is written back whole (the usual case)
// or, past what a host decodes in one write, a header at a time.
func TestTheSuccessHeadersFollowTheBackendsOwnInTheirOrder(t *testing.T) {
	for _, n := range []int{20, 1024} {
		t.Run(strconv.Itoa(n)+" backend headers", func(t *testing.T) {
			x := newHarness(t, keyBudgetConfig)
			var backend host.Headers
			for i := range n {
				backend = append(backend, [2]string{"x-h" + strconv.Itoa(i), "v" + strconv.Itoa(i%3)})
			}
			r := x.do(call{key: "sk-a", body: chatBody("hello", 500), respHeaders: backend, chunks: []string{chatResponse(10, 5)}})
			require.Equal(t, 200, r.status)

			var got host.Headers
			var ours []string
			for _, h := range r.headers {
				switch {
				case strings.HasPrefix(h[0], "x-h"):
					require.Empty(t, ours, "%s comes after a success header", h[0])
					got = append(got, h)
				case strings.HasPrefix(h[0], "x-ratelimit-"):
					ours = append(ours, h[0])
				}
			}
			require.Equal(t, backend, got, "every backend header, in order")
			require.ElementsMatch(t, []string{
				"x-ratelimit-tokens-limit", "x-ratelimit-tokens-remaining", "x-ratelimit-tokens-reset",
				"x-ratelimit-tokens-day-limit", "x-ratelimit-tokens-day-remaining", "x-ratelimit-tokens-day-reset",
			}, ours)
			require.Equal(t, "10000", r.header("x-ratelimit-tokens-limit"))
			v, ok := r.headers.Get(":status")
			require.True(t, ok)
			require.Equal(t, "200", v)
		})
	}
}

// The filter reads the response it has just written: a cache-hit header
// named like one of its success headers is the filter's own value (here
// the minute limit, 10000, named as the hit value), never the backend's;
// one merely named like them is the backend's.
func TestTheResponseIsReadAsTheFilterWroteIt(t *testing.T) {
	for _, c := range []struct {
		header, hit string
		free        bool
	}{
		{"x-ratelimit-tokens-limit", "10000", true},
		{"x-ratelimit-tokens-remaining", "HIT", false},
		{"x-ratelimit-upstream-cache", "HIT", true},
	} {
		t.Run(c.header, func(t *testing.T) {
			cfg := strings.Replace(keyBudgetConfig, `"rate_limiting"`,
				`"token_budget": { "cache_hit_header": "`+c.header+`", "cache_hit_value": "`+c.hit+`" }, "rate_limiting"`, 1)
			probe := probeReserve(t, cfg)
			x := newHarness(t, cfg)
			x.do(call{key: "sk-a", body: chatBody("hi", 500), respHeaders: host.Headers{{c.header, "HIT"}},
				chunks: []string{chatResponse(500, 500)}})
			level := x.level(t, "sk-a", probe)
			if c.free {
				require.Equal(t, int64(10000), level, "a cache hit is released")
			} else {
				require.Equal(t, int64(9000), level, "500 input and 500 output tokens charged")
			}
		})
	}
}
