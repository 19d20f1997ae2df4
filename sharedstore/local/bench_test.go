package local_test

import (
	"testing"

	"github.com/tokenbudget/tokenbudget/sharedstore"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

// sixDimensions is a plan on every dimension with both token periods, as a
// fully configured deployment admits it.
func sixDimensions(withRequests bool) sharedstore.Plan {
	big := func(dim, id string) sharedstore.Op { return tokens(dim, id, 100, minute(1<<40), day(1<<40)) }
	plan := sharedstore.Plan{Tokens: []sharedstore.Op{
		big("global", ""), big("client", "10.0.0.1"), big("api_key", "h1"),
		big("user", "alice"), big("team", "research"), big("model", "gpt-4o"),
	}}
	if withRequests {
		plan.Requests = []sharedstore.Op{
			requests("global", "", second(1<<40, 1<<30)),
			requests("api_key", "h1", second(1<<40, 1<<30), minute(1<<40), day(1<<40)),
			inflight("api_key", "h1", 1<<40),
		}
	}
	return plan
}

func benchmarkAdmitSettle(b *testing.B, withRequests bool) {
	c := &clock{t: 1_700_000_000 * sec}
	s := local.New(localtest.New(), c.now, 100000)
	plan := sixDimensions(withRequests)
	var hold sharedstore.Hold
	done := func(o sharedstore.Outcome) {
		if !o.Admitted() {
			b.Fatal("refused", o.Err)
		}
		hold = o.Hold
	}
	b.ReportAllocs()
	for b.Loop() {
		c.t += 1000
		s.Admit(plan, done)
		s.Settle(hold, 80)
	}
}

func BenchmarkAdmitSettleSixDimensionsTwoPeriods(b *testing.B) { benchmarkAdmitSettle(b, false) }

func BenchmarkAdmitSettleSixDimensionsWithRequestLimits(b *testing.B) {
	benchmarkAdmitSettle(b, true)
}
