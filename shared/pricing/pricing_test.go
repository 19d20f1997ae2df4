package pricing

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

// usd reads a price or amount written as decimal USD (per million tokens
// for prices).
func usd(s string) money.Price {
	p, err := money.ParsePrice(s)
	if err != nil {
		panic(err)
	}
	return money.Price(p)
}

// sonnet is a long-context price list: $3 / $0.30 / $3.75 / $6 / $15 per
// million, doubled input and 1.5× output above 200,000 input tokens.
var sonnet = Entry{
	Base:             Rates{Input: usd("3"), CachedInput: usd("0.30"), CacheWrite: usd("3.75"), CacheWrite1h: usd("6"), Output: usd("15")},
	AboveInputTokens: 200_000,
	Tier:             Rates{Input: usd("6"), CachedInput: usd("0.60"), CacheWrite: usd("7.50"), CacheWrite1h: usd("12"), Output: usd("22.50")},
}

func TestCostPricesEveryKindAtItsOwnRate(t *testing.T) {
	tests := []struct {
		name string
		k    tokens.Kinds
		want money.Amount
	}{
		{"uncached input", tokens.Kinds{Input: 1_000_000}, 3 * money.OneUSD},
		{"cached input", tokens.Kinds{CachedInput: 1_000_000}, 300_000_000},
		{"five-minute cache write", tokens.Kinds{CacheWrite: 1_000_000}, 3_750_000_000},
		{"one-hour cache write", tokens.Kinds{CacheWrite1h: 1_000_000}, 6 * money.OneUSD},
		{"output", tokens.Kinds{Output: 1_000_000}, 15 * money.OneUSD},
		{"a mixed request", tokens.Kinds{Input: 1000, CachedInput: 20_000, CacheWrite: 3000, CacheWrite1h: 500, Output: 800},
			// 1000×3 + 20000×0.3 + 3000×3.75 + 500×6 + 800×15 = 35250 µUSD
			35_250_000},
		{"nothing used costs nothing", tokens.Kinds{}, 0},
	}
	flat := sonnet
	flat.AboveInputTokens = 0 // a million input tokens would switch to the tier
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Cost(tt.k, flat))
		})
	}
}

func TestLongContextTierPricesTheWholeRequestAboveTheThreshold(t *testing.T) {
	at := tokens.Kinds{Input: 150_000, CachedInput: 40_000, CacheWrite: 10_000, Output: 1_000_000}
	require.Equal(t, sonnet.Base, sonnet.RatesFor(at), "exactly the threshold stays on the base rates")
	// 150000×3 + 40000×0.3 + 10000×3.75 + 1e6×15 = 15,499,500 µUSD
	require.Equal(t, money.Amount(15_499_500_000), Cost(at, sonnet))

	above := at
	above.CacheWrite1h = 1 // cached and written tokens count toward the threshold
	require.Equal(t, sonnet.Tier, sonnet.RatesFor(above))
	// 150000×6 + 40000×0.6 + 10000×7.5 + 1×12 + 1e6×22.5 = 23,499,012 µUSD
	require.Equal(t, money.Amount(23_499_012_000), Cost(above, sonnet))

	flat := sonnet
	flat.AboveInputTokens = 0
	require.Equal(t, flat.Base, flat.RatesFor(tokens.Kinds{Input: math.MaxInt64}), "no threshold, no tier")
}

func TestPerRequestPriceIsAddedOnceWhateverTheUsage(t *testing.T) {
	t.Parallel()
	e := Entry{Base: Rates{Input: usd("1"), Output: usd("2")}, PerRequest: money.Amount(usd("0.01"))}
	require.Equal(t, money.Amount(10_000_000), Cost(tokens.Kinds{}, e))
	require.Equal(t, money.Amount(10_000_000+1_000_000+2_000_000), Cost(tokens.Kinds{Input: 1000, Output: 1000}, e))
}

func TestCostRoundsUpOncePerRequest(t *testing.T) {
	t.Parallel()
	cheap := Entry{Base: Rates{Input: usd("0.0375"), CachedInput: usd("0.0375"), Output: usd("0.5")}}
	// 1 token at $0.0375/M is 37.5 nano-USD: charged 38, never 37.
	require.Equal(t, money.Amount(38), Cost(tokens.Kinds{Input: 1}, cheap))
	// Two kinds of half a nano-dollar each: 0.5 + 0.5 = 1, not 1 + 1.
	half := Entry{Base: Rates{Input: 500_000, Output: 500_000}} // $0.0005 per million
	require.Equal(t, money.Amount(1), Cost(tokens.Kinds{Input: 1, Output: 1}, half))
	// An exact figure is not rounded.
	require.Equal(t, money.Amount(75), Cost(tokens.Kinds{Input: 1, CachedInput: 1}, cheap))
	// The smallest usage at the smallest price is still charged.
	require.Equal(t, money.Amount(1), Cost(tokens.Kinds{Output: 1}, Entry{Base: Rates{Output: 1}}))
}

func TestCostSaturatesInsteadOfOverflowing(t *testing.T) {
	huge := Entry{Base: Rates{Input: math.MaxInt64, CachedInput: math.MaxInt64, CacheWrite: math.MaxInt64, CacheWrite1h: math.MaxInt64, Output: math.MaxInt64}, PerRequest: money.Max}
	all := tokens.Kinds{Input: math.MaxInt64, CachedInput: math.MaxInt64, CacheWrite: math.MaxInt64, CacheWrite1h: math.MaxInt64, Output: math.MaxInt64}
	require.Equal(t, money.Max, Cost(all, huge))
	require.Equal(t, money.Max, Cost(tokens.Kinds{Output: 1_000_000}, Entry{PerRequest: money.Max, Base: Rates{Output: 1}}))
	// A trillion tokens at $1000 per million fits: $1e9.
	require.Equal(t, money.Amount(1e18), Cost(tokens.Kinds{Output: 1e12}, Entry{Base: Rates{Output: usd("1000")}}))
	require.Equal(t, money.Amount(0), Cost(tokens.Kinds{Input: -5, Output: -1}, sonnet), "negative counts charge nothing")
}

func TestLookupFallsBackToTheDefaultAndOtherwiseSaysNotPriced(t *testing.T) {
	def := Entry{Base: Rates{Input: usd("10"), Output: usd("30")}}
	withDefault := NewTable(map[string]Entry{"claude-sonnet-4-5": sonnet}, &def)
	e, ok := withDefault.Lookup("claude-sonnet-4-5")
	require.True(t, ok)
	require.Equal(t, sonnet, e)
	e, ok = withDefault.Lookup("some-new-model")
	require.True(t, ok)
	require.Equal(t, def, e)
	require.True(t, withDefault.HasDefault())

	noDefault := NewTable(map[string]Entry{"claude-sonnet-4-5": sonnet}, nil)
	_, ok = noDefault.Lookup("some-new-model")
	require.False(t, ok, "no entry and no default is not priced, never $0")
	require.False(t, noDefault.HasDefault())
	require.Equal(t, 1, noDefault.Len())

	var none *Table
	_, ok = none.Lookup("x")
	require.False(t, ok)
}

func FuzzCostIsTheExactCeilingOfTheUsageAtItsRates(f *testing.F) {
	f.Add(int64(1), int64(2), int64(3), int64(4), int64(5), int64(37_500_000), int64(0), int64(200_000))
	f.Add(int64(math.MaxInt64), int64(0), int64(0), int64(0), int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64), int64(0))
	f.Fuzz(func(t *testing.T, in, cached, write, write1h, out, rate, perReq, above int64) {
		k := tokens.Kinds{Input: in, CachedInput: cached, CacheWrite: write, CacheWrite1h: write1h, Output: out}
		e := Entry{
			Base:             Rates{Input: money.Price(rate), CachedInput: money.Price(rate / 10), CacheWrite: money.Price(rate / 3), CacheWrite1h: money.Price(rate / 2), Output: money.Price(rate / 7)},
			AboveInputTokens: above,
			Tier:             Rates{Input: money.Price(rate / 5), Output: money.Price(rate)},
			PerRequest:       money.Amount(perReq),
		}
		r := e.RatesFor(k)
		num := new(big.Int)
		add := func(tokens int64, price money.Price) {
			num.Add(num, new(big.Int).Mul(big.NewInt(max(tokens, 0)), big.NewInt(max(int64(price), 0))))
		}
		add(in, r.Input)
		add(cached, r.CachedInput)
		add(write, r.CacheWrite)
		add(write1h, r.CacheWrite1h)
		add(out, r.Output)
		add(max(perReq, 0), 1_000_000)
		q, m := new(big.Int).QuoRem(num, big.NewInt(1_000_000), new(big.Int))
		if m.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
		want := money.Max
		if q.IsInt64() {
			want = money.Amount(q.Int64())
		}
		require.Equal(t, want, Cost(k, e))
	})
}

func BenchmarkCost(b *testing.B) {
	k := tokens.Kinds{Input: 1000, CachedInput: 20_000, CacheWrite: 3000, CacheWrite1h: 500, Output: 800}
	var sink money.Amount
	for b.Loop() {
		sink += Cost(k, sonnet)
	}
	_ = sink
}
