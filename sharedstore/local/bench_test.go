package local_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/sharedstore/local"
	"github.com/tokenbudget/tokenbudget/sharedstore/local/localtest"
)

// sixDimensions is a plan on every dimension with both token periods, as a
// fully configured deployment admits it.
func sixDimensions(withRequests bool) limit.Plan {
	big := func(dim, id string) limit.Op { return tokens(dim, id, 100, minute(1<<40), day(1<<40)) }
	plan := limit.Plan{Tokens: []limit.Op{
		big("global", ""), big("client", "10.0.0.1"), big("api_key", "h1"),
		big("user", "alice"), big("team", "research"), big("model", "gpt-4o"),
	}}
	if withRequests {
		plan.Requests = []limit.Op{
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
	var hold limit.Hold
	done := func(o limit.Outcome) {
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

// contended is shared data that counts every call (each takes the one lock
// every worker shares, as Envoy's shared data does) and the compare-and-swap
// writes that lost to another worker.
type contended struct {
	*localtest.SharedData
	calls, lost atomic.Int64
}

func (c *contended) Get(key string) ([]byte, uint32, error) {
	c.calls.Add(1)
	return c.SharedData.Get(key)
}

func (c *contended) Set(key string, value []byte, cas uint32) error {
	c.calls.Add(1)
	err := c.SharedData.Set(key, value, cas)
	if errors.Is(err, local.ErrCasMismatch) {
		c.lost.Add(1)
	}
	return err
}

// BenchmarkContendedSettlement is GOMAXPROCS worker VMs (goroutines, a
// Store each; -cpu 4 makes four) admitting and settling on one shared data, every request on the
// same six buckets with a refund of 20 at settlement, and each worker
// ticking (Flush) every 100 of its requests: 200 requests a second per
// worker at the 500 ms tick. refunds=settle writes each refund when its
// hold ends (the default); refunds=batched is token_budget.refund_batching.
// It reports the shared-data calls (lock acquisitions) and the lost
// compare-and-swap writes per request.
func BenchmarkContendedSettlement(b *testing.B) {
	for _, mode := range []struct {
		name  string
		batch bool
	}{{"settle", false}, {"batched", true}} {
		b.Run("refunds="+mode.name, func(b *testing.B) {
			const perTick = 100
			sd := &contended{SharedData: localtest.New()}
			var now atomic.Int64
			now.Store(1_700_000_000 * sec)
			clock := func() int64 { return now.Add(1000) }
			plan := sixDimensions(false)
			var requests atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				s := local.New(sd, clock, 100000)
				s.SetRefundBatching(mode.batch)
				var hold limit.Hold
				done := func(o limit.Outcome) { hold = o.Hold }
				n := 0
				for pb.Next() {
					hold = limit.Hold{}
					s.Admit(plan, done)
					s.Settle(hold, 80)
					if n++; n%perTick == 0 {
						s.Flush()
					}
				}
				s.Flush()
				requests.Add(int64(n))
			})
			b.StopTimer()
			r := float64(requests.Load())
			b.ReportMetric(float64(sd.calls.Load())/r, "shared-data-calls/req")
			b.ReportMetric(float64(sd.lost.Load())/r, "lost-cas/req")
		})
	}
}
