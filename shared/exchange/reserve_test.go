package exchange

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
)

// A request under a spend limit reserves its maximum cost: the input
// estimate priced as input and the output ceiling as output, with the
// per-request fee, at the same price list that prices its settlement.
// spend_limits.reserve false reserves nothing.
func TestTheSpendPlanReservesTheHoldPricedByKind(t *testing.T) {
	pricing := `"pricing":{"gpt-4o":{"input":"2.50","output":"10","per_request":"0.001"}}`
	keys := `"api_keys":[{"key":"sk-a","id":"a","spend_limit_day_usd":1}]`
	cases := []struct {
		name    string
		spend   string
		reserve func(input, output int64) money.Amount
	}{
		{"reserved by default", "", func(in, out int64) money.Amount {
			return money.Amount((in*2_500_000_000+out*10_000_000_000+999_999)/1_000_000) + 1_000_000
		}},
		{"reserve false keeps the check-only rule", `,"spend_limits":{"reserve":false}`, func(int64, int64) money.Amount { return 0 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, withConfig(pricing+","+keys+c.spend))
			r.send(chat(`{"model":"gpt-4o","max_tokens":700,"messages":[{"role":"user","content":"hello there"}]}`))
			p := r.plan()
			require.True(t, p.Spend.Policy.Limits[1].Set, "the key's day limit applies")
			input := r.x.req.Input
			require.Positive(t, input)
			require.Equal(t, c.reserve(input, 700), p.Spend.Reserve)
		})
	}
}
