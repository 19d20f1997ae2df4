package config

import (
	"testing"

	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// The per-request spend work the filter adds before the store call: the
// policy lookup (three limits here), the price lookup and the preflight.
func BenchmarkSpendPolicyPriceAndCheck(b *testing.B) {
	rt, _, err := Load([]byte(spendConfig))
	if err != nil {
		b.Fatal(err)
	}
	k := rt.Key(sha("sk-own"))
	var used spend.Usage
	for b.Loop() {
		p := rt.SpendPolicy(k, "ann", "acme")
		if _, ok := rt.Price("claude"); !ok {
			b.Fatal("not priced")
		}
		if _, ok := spend.Check(&p, &used); !ok {
			b.Fatal("refused")
		}
	}
}
