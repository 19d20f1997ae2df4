package wasmtest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These pin the bucket rules of issue 8 in the shared-data store through
// the compiled module: what the store charges and refuses, as a caller
// sees it in statuses and headers.

// TestSharedDataADebtIsChargedWholeAndRefillRepaysIt: a backend that
// generates far beyond the hold makes the key's minute bucket go below
// zero; the key is refused until refill has repaid the debt and the next
// hold, and Retry-After says exactly when that is.
func TestSharedDataADebtIsChargedWholeAndRefillRepaysIt(t *testing.T) {
	x := newHarness(t, keyBudgetConfig) // 10000 a minute: 10000/60 tokens a second
	body := chatBody("hello", 100)
	first := x.do(call{key: "sk-debt", body: body, chunks: []string{chatResponse(20, 30000)}})
	require.Equal(t, 200, first.status)
	hold := reservedBy(t, first)

	r := x.do(call{key: "sk-debt", body: body, chunks: []string{chatResponse(0, 0)}})
	require.Equal(t, 429, r.status, "the key owes 20020 tokens: %s", r.body)
	require.Equal(t, "minute", details(t, r)["token_budget"])
	require.Equal(t, "0", r.header("x-ratelimit-tokens-remaining"), "a debt shows as nothing left, never negative")
	ceilDiv := func(a, b int64) int64 { return (a + b - 1) / b }
	wait := ceilDiv((hold+20020)*60, 10000) // the debt plus this request's hold, at the refill rate
	require.Equal(t, wait, atoi(t, r.header("retry-after")), "Retry-After counts the debt")
	now := x.clock.Now().Unix()
	require.Equal(t, now+ceilDiv((10000+20020)*60, 10000), atoi(t, r.header("x-ratelimit-tokens-reset")), "whole again once the debt is repaid")

	x.clock.Advance(time.Duration(wait-1) * time.Second)
	require.Equal(t, 429, x.do(call{key: "sk-debt", body: body, chunks: []string{chatResponse(0, 0)}}).status, "one second early")
	x.clock.Advance(time.Second)
	require.Equal(t, 200, x.do(call{key: "sk-debt", body: body, chunks: []string{chatResponse(0, 0)}}).status, "on time")
}

// TestSharedDataAnUnreadBodyHoldsItsEstimate: under on_unreadable_body
// "admit" a body the filter cannot parse is admitted on a hold of its
// bytes' estimate plus the default output, not a zero hold: it is refused
// where that hold does not fit, so such bodies cannot burst past the budget
// nor ride on a spent bucket.
func TestSharedDataAnUnreadBodyHoldsItsEstimate(t *testing.T) {
	cfg := strings.TrimSuffix(keyBudgetConfig, "}") + `,"token_budget":{"on_unreadable_body":"admit"}}`
	unparsable := "\xef\xbb\xbf" + chatBody("hi", 100) // a BOM: the filter cannot read it, a backend may
	cases := []struct {
		name   string
		used   int // usage settled on the key first
		status int
	}{
		{"room for the hold: admitted", 5000, 200},
		{"tokens left, but fewer than the hold: refused", 9000, 429},
		{"spent to exactly zero: refused", 10000, 429},
		{"in debt: refused", 25000, 429},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := newHarness(t, cfg)
			key := "sk-zero-" + itoa(c.used)
			require.Equal(t, 200, x.do(call{key: key, body: chatBody("hello", 100), chunks: []string{chatResponse(0, c.used)}}).status)
			r := x.do(call{key: key, body: unparsable, chunks: []string{chatResponse(0, 500)}})
			require.Equal(t, c.status, r.status, "%s", r.body)
			if c.status == 429 {
				require.GreaterOrEqual(t, atoi(t, r.header("retry-after")), int64(1))
			}
		})
	}
}
