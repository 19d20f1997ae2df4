package wasmtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// refundsConfig is the key: a 20,000-token minute budget.
const refundsConfig = `{
  "rate_limiting": {
    "limits": { "per_api_key": { "tokens_per_minute": 20000, "tokens_per_day": 10000000 } },
    "budget_division": { "replicas": 1 }
  }%s
}`

// A settlement's refund is in shared data when the hold ends: six requests
// of max_tokens 3000 with ten-token answers, alternating two workers, each
// report the budget less what the earlier ones used (ten tokens each) and
// their own reservation, whichever worker settled them. With
// refund_batching the other worker's refunds are missing until a tick.
func TestARefundIsSeenByEveryWorkerAtOnce(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		batched     bool
	}{
		{"default", "", false},
		{"refund_batching", `, "token_budget": { "refund_batching": true }`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newHarness(t, fmt.Sprintf(refundsConfig, c.extra), withWorkers(2))
			body := chatBody("hello", 3000)
			var remaining []int64
			var reserved int64
			for i := range 6 {
				r := x.doOn(i%2, call{key: "sk-spread", body: body, chunks: []string{chatResponse(0, 10)}})
				require.Equal(t, 200, r.status)
				if i == 0 {
					reserved = reservedBy(t, r)
				}
				remaining = append(remaining, atoi(t, r.header("x-ratelimit-tokens-remaining")))
			}
			t.Logf("x-ratelimit-tokens-remaining: %v (each reserves %d)", remaining, reserved)
			require.Greater(t, reserved, int64(3000))
			for i, got := range remaining {
				want := 20000 - 10*int64(i) - reserved
				if !c.batched {
					require.Equal(t, want, got, "request %d sees every earlier refund", i+1)
				} else if i > 0 {
					// Each worker sees its own refunds at once and the
					// other's reservations whole until the tick.
					require.Less(t, got, want-2000, "request %d misses the other worker's refund", i+1)
				}
			}
			if c.batched {
				x.h.Tick()
				r := x.doOn(0, call{key: "sk-spread", body: body, chunks: []string{chatResponse(0, 10)}})
				require.Equal(t, 20000-60-reserved, atoi(t, r.header("x-ratelimit-tokens-remaining")), "after one tick it does")
			}
		})
	}
}

// A reload retires the store its streams settled through: what it had
// pending is written then, since no tick will flush it.
func TestAReloadWritesTheRetiredStoresRefunds(t *testing.T) {
	x := newHarness(t, keyBudgetConfig, withWorkers(2))
	body := chatBody("hello", 1000)
	first := x.doOn(0, call{key: "sk-reload-refund", body: body, chunks: []string{chatResponse(100, 50)}})
	require.Equal(t, 200, first.status)
	reserved := reservedBy(t, first)

	require.NoError(t, x.h.Reload(context.Background(), []byte(keyBudgetConfig)))
	r := x.doOn(1, call{key: "sk-reload-refund", body: body, chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 200, r.status)
	require.Equal(t, 10000-150-reserved, atoi(t, r.header("x-ratelimit-tokens-remaining")),
		"the other worker sees the refund without a tick")
}
