package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

func benchSpend(b *testing.B, now time.Time, team, key string, limits map[spend.Slot]money.Amount) limit.Spend {
	day, month, ok := calendar.Both(now.UnixNano())
	if !ok {
		b.Fatal("clock")
	}
	sp := limit.Spend{Day: day, Month: month, Start: now.UnixNano(), Model: "m", Policy: spend.Policy{Team: team, APIKey: key}}
	for s, a := range limits {
		sp.Policy.Limits[s] = spend.Limit{Amount: a, Set: true}
	}
	return sp
}

// BenchmarkAdmitSpendWarmVsTokensAlone alternates, in one run, an
// admission of the 6-dimension token plan alone and the same plan with
// three spend limits (team month, key day and month) on a warm cache,
// through the service over loopback, one caller at a time; it reports each
// kind's p50 and p99.
//
//	go test ./sharedstore/server -run '^$' -bench AdmitSpendWarmVsTokensAlone -benchtime 3000x
func BenchmarkAdmitSpendWarmVsTokensAlone(b *testing.B) {
	e := newEnv(b, false)
	now := time.Now()
	se := newSpendEnv(b, e, now)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	sp := benchSpend(b, now, "bench-team", "k-1", map[spend.Slot]money.Amount{spend.TeamMonth: 1e15, spend.KeyDay: 1e15, spend.KeyMonth: 1e15})
	var tokLat, spendLat []time.Duration
	admitOne := func(p limit.Plan, hold string) time.Duration {
		t0 := time.Now()
		var r wire.AdmitResponse
		if err := call(client, se.http.URL+wire.PathAdmit, wire.AppendAdmitHold(nil, p, hold), &r); err != nil || !r.Admitted {
			b.Fatalf("admit: %v %+v", err, r)
		}
		d := time.Since(t0)
		var end wire.EndResponse
		if err := call(client, se.http.URL+wire.PathRelease, wire.AppendRelease(nil, r.Hold, nil), &end); err != nil {
			b.Fatal(err)
		}
		return d
	}
	warm := sixDimensionPlan("warm", 10)
	warm.Spend = sp
	admitOne(warm, randomHoldID())
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		p := sixDimensionPlan("sw"+strconv.Itoa(i%1000), 10)
		tokLat = append(tokLat, admitOne(p, randomHoldID()))
		p.Spend = sp
		spendLat = append(spendLat, admitOne(p, randomHoldID()))
	}
	elapsed := time.Since(start)
	b.StopTimer()
	report := func(name string, lat []time.Duration) {
		sorted := append([]time.Duration(nil), lat...)
		slices.Sort(sorted)
		q := func(p float64) float64 { return float64(sorted[int(p*float64(len(sorted)-1))].Microseconds()) }
		b.ReportMetric(q(0.50), name+"-p50-µs")
		b.ReportMetric(q(0.99), name+"-p99-µs")
	}
	report("tokens", tokLat)
	report("spend", spendLat)
	b.ReportMetric(float64(2*len(tokLat))/elapsed.Seconds(), "admits/s")
}

// BenchmarkWorkerRecordsPerSecond charges b.N records of one team, spread
// over 20 keys, in worker runs, and reports records/s (pricing, charges,
// aggregates and the cache refresh included).
//
//	go test ./sharedstore/server -run '^$' -bench WorkerRecordsPerSecond -benchtime 5000x
func BenchmarkWorkerRecordsPerSecond(b *testing.B) {
	e := newEnv(b, false)
	now := time.Now()
	se := newSpendEnv(b, e, now)
	ctx := context.Background()
	in, _ := money.ParsePrice("1")
	e1 := pricing.Entry{Base: pricing.Rates{Input: in, CachedInput: in, CacheWrite: in, CacheWrite1h: in, Output: in}}
	if _, err := se.led.PutPrices(ctx, now.Add(-time.Hour), map[string]pricing.Entry{"m": e1}, nil); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		r := ledger.Record{ID: "w" + strconv.Itoa(i), Team: "bench", APIKey: "k" + strconv.Itoa(i%20), User: "u" + strconv.Itoa(i%7),
			Model: "m", Usage: tokens.Kinds{Input: 1000, Output: 100}, CallStart: now.Add(-time.Minute), Estimate: 1100}
		if _, err := se.led.InsertRecord(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	charged := 0
	for charged < b.N {
		st, err := se.worker.RunOnce(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if st.Charged == 0 {
			b.Fatalf("charged %d of %d", charged, b.N)
		}
		charged += st.Charged
	}
	b.ReportMetric(float64(charged)/time.Since(start).Seconds(), "records/s")
}

// BenchmarkOvershootAtATeamLimitUnder64Callers runs 64 concurrent callers
// against one team's $1.00 monthly limit, each call estimated at $0.01 and
// settled 2 ms after its admission (the spend is known only then), until
// every caller is refused. It reports the spend admitted past the limit in
// USD and as a fraction of the cost in flight (64 × $0.01).
//
//	go test ./sharedstore/server -run '^$' -bench OvershootAtATeamLimitUnder64Callers -benchtime 3x
func BenchmarkOvershootAtATeamLimitUnder64Callers(b *testing.B) {
	e := newEnv(b, false)
	now := time.Now()
	se := newSpendEnv(b, e, now)
	const callers, cost, lim = 64, 10_000_000, 1_000_000_000
	var worst, total float64
	for n := 0; b.Loop(); n++ {
		team := "over-" + strconv.Itoa(n)
		sp := benchSpend(b, now, team, "k", map[spend.Slot]money.Amount{spend.TeamMonth: lim})
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers}}
		var spent atomic.Int64
		var wg sync.WaitGroup
		for c := 0; c < callers; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					hold := randomHoldID()
					var r wire.AdmitResponse
					if err := call(client, se.http.URL+wire.PathAdmit, wire.AppendAdmitHold(nil, limit.Plan{Spend: sp}, hold), &r); err != nil {
						b.Error(err)
						return
					}
					if !r.Admitted {
						return
					}
					time.Sleep(2 * time.Millisecond)
					h := limit.Hold{ID: hold, Spend: sp, SpendCost: cost, SpendUsage: tokens.Kinds{Input: 1}}
					var end wire.EndResponse
					if err := call(client, se.http.URL+wire.PathSettle, wire.AppendSettleRecord(nil, hold, 0, nil, wire.RecordOf(h)), &end); err != nil {
						b.Error(err)
						return
					}
					spent.Add(cost)
				}
			}()
		}
		wg.Wait()
		got, _ := se.c.Get(context.Background(), spendcache.UsageKey(team, spend.Team, team, calendar.Month, sp.Month.Key)).Int64()
		if got != spent.Load() {
			b.Fatalf("counter %d, settled %d", got, spent.Load())
		}
		over := float64(max(got-lim, 0)) / 1e9
		total += over
		worst = max(worst, over)
	}
	b.ReportMetric(total/float64(b.N), "overshoot-usd")
	b.ReportMetric(worst, "worst-overshoot-usd")
	b.ReportMetric(total/float64(b.N)/(callers*float64(cost)/1e9), "overshoot/in-flight")
}
