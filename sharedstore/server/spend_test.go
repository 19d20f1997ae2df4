package server

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

func TestAFleetSpendLimitRefusesOnceTheCountersReachIt(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-08T12:00:00Z")
			se := newSpendEnv(t, e, now)
			c := spender{team: uniq("team"), key: "k-1", user: "u-1", limits: map[spend.Slot]string{spend.KeyDay: "1.00"}}
			sp := c.spendAt(t, now)

			// Cold cache: the miss loads the team and answers checked, at 0.
			a := se.admit(t, sp)
			require.NoError(t, a.err)
			require.True(t, a.out.Admitted())
			require.Equal(t, money.Amount(0), a.out.Spend[spend.KeyDay])
			require.Equal(t, int64(1), se.led.reads.Load())
			got, ok := se.counter(t, c.team, spend.KeyDay, "k-1", sp.Day)
			require.True(t, ok, "the load fills the limited counter")
			require.Equal(t, money.Amount(0), got)

			st, _ := se.settle(t, a.hold, sp, "0.60", tokens.Kinds{Input: 10})
			require.Equal(t, http.StatusOK, st)
			got, _ = se.counter(t, c.team, spend.KeyDay, "k-1", sp.Day)
			require.Equal(t, usdAmount(t, "0.60"), got, "the postflight adds the estimate at once")
			_, ok = se.counter(t, c.team, spend.UserMonth, "u-1", sp.Month)
			require.False(t, ok, "a counter no limit bears on is not cached")

			se.spent(t, c, now, "0.50", tokens.Kinds{Input: 10})
			a = se.admit(t, sp)
			require.NoError(t, a.err)
			require.False(t, a.out.Admitted())
			require.Equal(t, &spend.Exceeded{Slot: spend.KeyDay, Limit: usdAmount(t, "1.00"), Used: usdAmount(t, "1.10")}, a.out.SpendRefusal)
			require.Equal(t, int64(1), se.led.reads.Load(), "a warm cache never reads the ledger")
		})
	}
}

func TestWithAWarmCacheTokensAndSpendTakeOneRoundTrip(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-08T12:00:00Z")
	se := newSpendEnv(t, e, now)
	c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyMonth: "5", spend.TeamMonth: "50"}}
	sp := c.spendAt(t, now)
	se.admit(t, sp) // warms the team
	plan := limit.Plan{Tokens: []limit.Op{tokOp(uniq("tok"), "api_key", 10, minute(100))}, Spend: sp}
	e.rt.n.Store(0)
	o, vd, err := se.store.AdmitSpend(context.Background(), plan, newHoldID())
	require.NoError(t, err)
	require.True(t, o.Admitted())
	require.NotNil(t, vd)
	require.Equal(t, int64(1), e.rt.n.Load())
}

func TestACallStartedBeforeMonthEndCountsInItsStartPeriodsAndNeverRecreatesTheirKeys(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			start := utc(t, "2026-09-30T23:59:00Z")
			se := newSpendEnv(t, e, start)
			se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
			c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyDay: "10", spend.KeyMonth: "10"}}
			sp := c.spendAt(t, start)
			a := se.admit(t, sp)
			require.True(t, a.out.Admitted())
			require.NoError(t, se.c.Del(context.Background(), spendcache.UsageKey(c.team, spend.APIKey, "k-1", calendar.Day, sp.Day.Key)).Err())

			// It settles in October: September's keys are closed.
			se.clock.Set(utc(t, "2026-10-01T00:00:30Z"))
			st, _ := se.settle(t, a.hold, sp, "0.002", tokens.Kinds{Input: 1000, Output: 1000})
			require.Equal(t, http.StatusOK, st)
			_, ok := se.counter(t, c.team, spend.KeyDay, "k-1", sp.Day)
			require.False(t, ok, "the closed day's expired key is not recreated by the postflight")
			se.runWorker(t)
			_, ok = se.counter(t, c.team, spend.KeyDay, "k-1", sp.Day)
			require.False(t, ok, "nor by the refresh")
			oct, _, ok2 := calendar.Both(utc(t, "2026-10-01T00:00:30Z").UnixNano())
			require.True(t, ok2)
			_, ok = se.counter(t, c.team, spend.KeyDay, "k-1", oct)
			require.False(t, ok, "nothing moves to the new day")
			require.Equal(t, money.Amount(2_000_000), se.aggregate(t, c.team, spend.APIKey, "k-1", sp.Day))
			require.Equal(t, money.Amount(2_000_000), se.aggregate(t, c.team, spend.APIKey, "k-1", sp.Month))
			require.Equal(t, money.Amount(2_000_000), se.aggregate(t, c.team, spend.Team, c.team, sp.Month))
		})
	}
}

func TestAReplayedOrRetriedSettlementAddsOnce(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-08T12:00:00Z")
			se := newSpendEnv(t, e, now)
			se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
			c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyMonth: "10"}}
			sp := c.spendAt(t, now)
			a := se.admit(t, sp)
			for i := 0; i < 3; i++ {
				st, _ := se.settle(t, a.hold, sp, "0.25", tokens.Kinds{Input: 1000})
				require.Equal(t, http.StatusOK, st)
			}
			got, _ := se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
			require.Equal(t, usdAmount(t, "0.25"), got)
			st := se.runWorker(t)
			require.Equal(t, 1, st.Charged)
			se.runWorker(t)
			got, _ = se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
			require.Equal(t, money.Amount(1_000_000), got, "the refresh sets the exact charge, never charge on top of the estimate")
			require.Equal(t, money.Amount(1_000_000), se.aggregate(t, c.team, spend.APIKey, "k-1", sp.Month))
		})
	}
}

func TestAWorkerStoppedBetweenCommitAndRefreshIsRepairedByTheNextRun(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-08T12:00:00Z")
	se := newSpendEnv(t, e, now)
	se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
	c := spender{team: uniq("team"), user: "u-1", limits: map[spend.Slot]string{spend.UserDay: "10"}}
	se.spent(t, c, now, "0.50", tokens.Kinds{Input: 3000})
	sp := c.spendAt(t, now)

	// The commit happens; the process dies before it refreshes Redis.
	res, err := ledger.NewWorker(se.led.Ledger, 0).RunTeam(context.Background(), c.team)
	require.NoError(t, err)
	require.Len(t, res.Charged, 1)
	got, _ := se.counter(t, c.team, spend.UserDay, "u-1", sp.Day)
	require.Equal(t, usdAmount(t, "0.50"), got, "still the estimate")

	st := se.runWorker(t)
	require.Zero(t, st.Charged, "nothing new to charge")
	require.Equal(t, 1, st.Refreshed, "the run refreshes the team anyway")
	got, _ = se.counter(t, c.team, spend.UserDay, "u-1", sp.Day)
	require.Equal(t, money.Amount(3_000_000), got)
}

// A PostgreSQL outage, cut behind a TCP gate: settlements are kept in the
// Redis outbox and answered as taken, their estimates reach the counters at
// once (so the limit still refuses), a record sent twice is kept once, a
// refresh before the drain forgets none of them, and the drain stores each
// once, oldest first, even one that reached the ledger by another path
// (whose postflight does not run twice).
func TestAPostgreSQLOutageLosesNoRecordAndTheLimitsKeepHolding(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			now := utc(t, "2026-09-08T12:00:00Z")
			se, gate := newGatedSpendEnv(t, e, now)
			se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
			c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyMonth: "0.25"}}
			sp := c.spendAt(t, now)
			holds := []string{se.admit(t, sp).hold, se.admit(t, sp).hold, se.admit(t, sp).hold} // warm

			gate.Cut()
			for i, h := range holds {
				st, _ := se.settle(t, h, sp, "0.10", tokens.Kinds{Input: 1000 * int64(i+1)})
				require.Equal(t, http.StatusOK, st, "the outbox takes the record")
			}
			st, _ := se.settle(t, holds[0], sp, "0.10", tokens.Kinds{Input: 1000})
			require.Equal(t, http.StatusOK, st, "a retried settlement")
			got, _ := se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
			require.Equal(t, usdAmount(t, "0.30"), got, "the postflight ran once per record, during the outage")
			a := se.admit(t, sp)
			require.NoError(t, a.err)
			require.False(t, a.out.Admitted(), "the $0.25 limit holds while the ledger is down")

			moved, left, err := se.srv.DrainOutbox(ctx)
			require.NoError(t, err, "a drain while the ledger is down only counts")
			require.Zero(t, moved)
			require.Equal(t, int64(3), left)
			require.Equal(t, 3.0, outboxGauge(t, se.srv))

			gate.Open()
			// The filter's retry of the oldest record reached the ledger
			// directly (another replica) before the drain.
			first := ledger.Record{ID: holds[0], Team: c.team, APIKey: "k-1", Model: "m", Usage: tokens.Kinds{Input: 1000},
				CallStart: now, Estimate: usdAmount(t, "0.10")}
			_, err = se.led.InsertRecord(ctx, first)
			require.NoError(t, err)
			// The second record's retry reaches a replica that finds the
			// ledger up: stored there, its estimate not counted again.
			se.srv.ledgerDown.Store(false)
			st, _ = se.settle(t, holds[1], sp, "0.10", tokens.Kinds{Input: 2000})
			require.Equal(t, http.StatusOK, st)
			got, _ = se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
			require.Equal(t, usdAmount(t, "0.30"), got, "a retry of a kept record runs no second postflight")
			se.runWorker(t) // charges those two; refreshes with the outbox counted
			got, _ = se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
			require.Equal(t, money.Amount(3_000_000)+usdAmount(t, "0.30"), got,
				"a refresh before the drain keeps the outbox's estimates (a record in both places counts twice until the drain: never too little)")

			moved, left, err = se.srv.DrainOutbox(ctx)
			require.NoError(t, err)
			require.Equal(t, 3, moved)
			require.Zero(t, left)
			require.Zero(t, outboxGauge(t, se.srv))
			var n int
			require.NoError(t, se.pool.QueryRow(ctx, "SELECT count(*) FROM inference_records WHERE team = $1", c.team).Scan(&n))
			require.Equal(t, 3, n, "each record once")
			se.runWorker(t)
			require.Equal(t, money.Amount(6_000_000), se.aggregate(t, c.team, spend.APIKey, "k-1", sp.Month), "1000+2000+3000 tokens at $1/M")
			got, _ = se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
			require.Equal(t, money.Amount(6_000_000), got, "the counter is its aggregate (nothing pending)")
			teams, err := se.cache.OutboxTeams(ctx)
			require.NoError(t, err)
			require.NotContains(t, teams, c.team, "an empty outbox leaves the drain's list")
		})
	}
}

// outboxGauge reads the service's tokenbudget_sharedstore_spend_outbox_records.
func outboxGauge(t *testing.T, s *Server) float64 {
	var m dto.Metric
	require.NoError(t, s.m.outbox.Write(&m))
	return m.GetGauge().GetValue()
}

func TestConcurrentMissesOfOneTeamReadTheLedgerOnce(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-08T12:00:00Z")
			se := newSpendEnv(t, e, now)
			se.led.delay = 200 * time.Millisecond
			team := uniq("team")
			var wg sync.WaitGroup
			results := make([]admitted, 16)
			for i := range results {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					c := spender{team: team, key: "k-" + string(rune('a'+i)), limits: map[spend.Slot]string{spend.KeyDay: "1", spend.TeamMonth: "100"}}
					results[i] = se.admit(t, c.spendAt(t, now))
				}(i)
			}
			wg.Wait()
			for _, r := range results {
				require.NoError(t, r.err)
				require.True(t, r.out.Admitted())
			}
			require.Equal(t, int64(1), se.led.reads.Load())
		})
	}
}

func TestConcurrentPostflightsAddEveryEstimate(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-08T12:00:00Z")
			se := newSpendEnv(t, e, now)
			c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.TeamMonth: "1000"}}
			sp := c.spendAt(t, now)
			const n = 40
			holds := make([]string, n)
			for i := range holds {
				holds[i] = se.admit(t, sp).hold
			}
			var wg sync.WaitGroup
			for _, h := range holds {
				wg.Add(1)
				go func(h string) {
					defer wg.Done()
					st, _ := se.settle(t, h, sp, "0.001", tokens.Kinds{Input: 1})
					require.Equal(t, http.StatusOK, st)
				}(h)
			}
			wg.Wait()
			got, _ := se.counter(t, c.team, spend.TeamMonth, c.team, sp.Month)
			require.Equal(t, money.Amount(n*1_000_000), got)
		})
	}
}

func TestALimitAddedMidMonthSeesTheSpendSoFar(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-20T12:00:00Z")
	se := newSpendEnv(t, e, now)
	se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
	team := uniq("team")
	// Spend with only the key's daily limit in force: the team's month is
	// not a cached counter, but the ledger aggregates it.
	c := spender{team: team, key: "k-1", user: "u-1", limits: map[spend.Slot]string{spend.KeyDay: "100"}}
	for i := 0; i < 3; i++ {
		se.spent(t, c, now.Add(-time.Duration(i)*24*time.Hour), "0.001", tokens.Kinds{Input: 1_000_000})
	}
	se.runWorker(t)
	_, ok := se.counter(t, team, spend.TeamMonth, team, c.spendAt(t, now).Month)
	require.False(t, ok)

	// The operator adds a $2.50 team monthly limit (the admin API stores it
	// and invalidates the team).
	require.NoError(t, se.led.PutPolicy(context.Background(), team, ledger.Policy{Scope: spend.Team, ID: team, Period: calendar.Month, Limit: usdAmount(t, "2.50")}))
	se.invalidate(t, team)
	a := se.admit(t, c.spendAt(t, now))
	require.NoError(t, a.err)
	require.False(t, a.out.Admitted(), "$3 already spent this month")
	require.Equal(t, &spend.Exceeded{Slot: spend.TeamMonth, Limit: usdAmount(t, "2.50"), Used: usdAmount(t, "3")}, a.out.SpendRefusal)
}

func TestTheStricterOfTheFiltersAndTheStoredLimitApplies(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-20T12:00:00Z")
	se := newSpendEnv(t, e, now)
	team := uniq("team")
	require.NoError(t, se.led.PutPolicy(context.Background(), team, ledger.Policy{Scope: spend.APIKey, ID: "k-1", Period: calendar.Day, Limit: usdAmount(t, "0.50")}))
	c := spender{team: team, key: "k-1", limits: map[spend.Slot]string{spend.KeyDay: "5"}}
	se.spent(t, c, now, "0.50", tokens.Kinds{Input: 1})
	a := se.admit(t, c.spendAt(t, now))
	require.False(t, a.out.Admitted())
	require.Equal(t, &spend.Exceeded{Slot: spend.KeyDay, Limit: usdAmount(t, "0.50"), Used: usdAmount(t, "0.50")}, a.out.SpendRefusal)

	// A stored limit on a slot the filter does not limit applies too.
	team2 := uniq("team")
	require.NoError(t, se.led.PutPolicy(context.Background(), team2, ledger.Policy{Scope: spend.User, ID: "u-1", Period: calendar.Month, Limit: 0}))
	a = se.admit(t, spender{team: team2, key: "k-1", user: "u-1", limits: map[spend.Slot]string{spend.KeyDay: "5"}}.spendAt(t, now))
	require.NoError(t, a.err)
	require.False(t, a.out.Admitted())
	require.Equal(t, spend.UserMonth, a.out.SpendRefusal.Slot)
}

func TestATeamWhoseBalanceIsSpentIsRefused(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-20T12:00:00Z")
			se := newSpendEnv(t, e, now)
			se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
			team := uniq("team")
			require.NoError(t, se.led.SetBalance(context.Background(), team, usdAmount(t, "1.00")))
			c := spender{team: team, key: "k-1", limits: map[spend.Slot]string{spend.KeyDay: "100"}}
			se.spent(t, c, now, "0.70", tokens.Kinds{Input: 600_000})
			bal, ok := se.readInt(t, spendcache.BalanceKey(team))
			require.True(t, ok)
			require.Equal(t, usdAmount(t, "0.30"), bal, "the postflight deducts the estimate")
			se.spent(t, c, now, "0.40", tokens.Kinds{Input: 600_000})
			a := se.admit(t, c.spendAt(t, now))
			require.NoError(t, a.err)
			require.False(t, a.out.Admitted())
			require.True(t, a.out.SpendRefusal.Balance)

			// The worker charges $1.20 and corrects the cache to the ledger.
			se.runWorker(t)
			bal, _ = se.readInt(t, spendcache.BalanceKey(team))
			require.Equal(t, -usdAmount(t, "0.20"), bal)
			_, _, err := se.led.TopUp(context.Background(), team, "top-1", usdAmount(t, "5"))
			require.NoError(t, err)
			se.invalidate(t, team)
			a = se.admit(t, c.spendAt(t, now))
			require.True(t, a.out.Admitted(), "a top-up lets the team spend again")
		})
	}
}

func TestAPriceChangeAppliesFromItsEffectiveTimeToTheRefreshedCounters(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-20T12:00:00Z")
	se := newSpendEnv(t, e, now)
	se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
	se.prices(t, utc(t, "2026-09-20T00:00:00Z"), "2", "2")
	c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyMonth: "100"}}
	se.spent(t, c, utc(t, "2026-09-19T23:00:00Z"), "0.001", tokens.Kinds{Input: 1_000_000})
	se.spent(t, c, utc(t, "2026-09-20T01:00:00Z"), "0.001", tokens.Kinds{Input: 1_000_000})
	se.runWorker(t)
	got, _ := se.counter(t, c.team, spend.KeyMonth, "k-1", c.spendAt(t, now).Month)
	require.Equal(t, usdAmount(t, "3"), got, "$1 at the old list, $2 at the new")
}

func TestEveryCachedCounterEqualsItsAggregatePlusPending(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-20T12:00:00Z")
	se := newSpendEnv(t, e, now)
	se.prices(t, utc(t, "2026-01-01T00:00:00Z"), "1", "1")
	team := uniq("team")
	c := spender{team: team, key: "k-1", user: "u-1", limits: map[spend.Slot]string{spend.KeyDay: "100", spend.UserMonth: "100", spend.TeamMonth: "100"}}
	for i := 0; i < 5; i++ {
		se.spent(t, c, now, "0.003", tokens.Kinds{Input: 1000 * int64(i+1)})
	}
	se.runWorker(t)
	for i := 0; i < 2; i++ {
		se.spent(t, c, now, "0.004", tokens.Kinds{Input: 1000})
	}
	sp := c.spendAt(t, now)
	snap, err := se.led.Snapshot(context.Background(), team, []calendar.Window{sp.Day, sp.Month})
	require.NoError(t, err)
	for _, s := range []spend.Slot{spend.KeyDay, spend.UserMonth, spend.TeamMonth} {
		id := spendcache.TeamOf(team)
		if s != spend.TeamMonth {
			id = sp.Policy.ID(s)
		}
		w := sp.Window(s)
		got, ok := se.counter(t, team, s, id, w)
		require.True(t, ok)
		want := snap.Figures[ledger.FigureKey{Scope: s.Scope(), ID: id, Period: w.Period, Key: w.Key}]
		require.Equal(t, want, got, s.String())
		require.Equal(t, money.Amount(15_000_000+8_000_000), want)
	}
}

func TestSpendAmountsPast2To53NanoUSDCompareExactly(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-08T12:00:00Z")
	se := newSpendEnv(t, e, now)
	c := spender{team: uniq("team"), key: "k-1"}
	sp := c.spendAt(t, now)
	sp.Policy.Limits[spend.KeyMonth] = spend.Limit{Amount: 1<<53 + 1, Set: true}
	se.admit(t, sp) // warm
	key := spendcache.UsageKey(c.team, spend.APIKey, "k-1", calendar.Month, sp.Month.Key)
	// As doubles both are 2^53: a float comparison would refuse.
	require.NoError(t, se.c.Set(context.Background(), key, "9007199254740992", 0).Err())
	a := se.admit(t, sp)
	require.NoError(t, a.err)
	require.True(t, a.out.Admitted())
	require.Equal(t, money.Amount(1<<53), a.out.Spend[spend.KeyMonth])
	require.NoError(t, se.c.Set(context.Background(), key, "9007199254740993", 0).Err())
	a = se.admit(t, sp)
	require.False(t, a.out.Admitted())
}

func TestACorruptCounterFailsTheCheckAndWritesNothing(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-08T12:00:00Z")
	se := newSpendEnv(t, e, now)
	c := spender{team: uniq("team"), key: "k-1", user: "u-1", limits: map[spend.Slot]string{spend.KeyDay: "5", spend.UserDay: "5"}}
	sp := c.spendAt(t, now)
	a := se.admit(t, sp)
	require.NoError(t, se.c.Set(context.Background(), spendcache.UsageKey(c.team, spend.User, "u-1", calendar.Day, sp.Day.Key), "1.5", 0).Err())
	b := se.admit(t, sp)
	require.ErrorIs(t, b.err, limit.ErrSpendUnavailable)

	// The postflight checks every key before it writes any.
	st, _ := se.settle(t, a.hold, sp, "1", tokens.Kinds{Input: 1})
	require.Equal(t, http.StatusOK, st, "the record is stored; the counters wait for the refresh")
	got, _ := se.counter(t, c.team, spend.KeyDay, "k-1", sp.Day)
	require.Equal(t, money.Amount(0), got, "the valid counter was not written either")
}

func TestALoadFillsOnlyAbsentKeysAndGivesThemTheirPeriodsLifetime(t *testing.T) {
	e := newEnv(t, false)
	now := utc(t, "2026-09-08T12:00:00Z")
	se := newSpendEnv(t, e, now)
	c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyDay: "5", spend.KeyMonth: "5"}}
	sp := c.spendAt(t, now)
	ctx := context.Background()
	// A postflight's figure the ledger does not know yet: a load must not
	// overwrite it.
	month := spendcache.UsageKey(c.team, spend.APIKey, "k-1", calendar.Month, sp.Month.Key)
	require.NoError(t, se.c.Set(ctx, month, "1234", time.Hour).Err())
	a := se.admit(t, sp)
	require.NoError(t, a.err)
	require.Equal(t, money.Amount(1234), a.out.Spend[spend.KeyMonth])
	got, _ := se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
	require.Equal(t, money.Amount(1234), got)

	ttl, err := se.c.PTTL(ctx, spendcache.UsageKey(c.team, spend.APIKey, "k-1", calendar.Day, sp.Day.Key)).Result()
	require.NoError(t, err)
	require.InDelta(t, (12*time.Hour + 48*time.Hour).Seconds(), ttl.Seconds(), 5, "the day's key lives 2 days past the day")
	ttl, err = se.c.PTTL(ctx, spendcache.PolicyKey(c.team)).Result()
	require.NoError(t, err)
	require.InDelta(t, (10 * time.Minute).Seconds(), ttl.Seconds(), 5)
}

func TestRedisDownAnswers503WithOrWithoutASpendPart(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = dead.Close() })
	cache := spendcache.New(dead, nil, spendcache.Options{})
	srv := serve(t, New(Config{Buckets: NewBuckets(dead, Options{Spend: cache}), Token: spendToken}))
	se := &spendEnv{http: srv}
	now := utc(t, "2026-09-08T12:00:00Z")
	sp := spender{team: "t", key: "k", limits: map[spend.Slot]string{spend.KeyDay: "1"}}.spendAt(t, now)
	a := se.admit(t, sp)
	require.Equal(t, http.StatusServiceUnavailable, a.status, "the store's own outage: the filter's fallback policy decides, as for tokens")
}

// A ledger that hangs (its network stalled behind the gate) does not hold
// settlements: the insert gives up at LedgerTimeout, the record waits in
// the outbox, and the next settlements go there without trying the ledger,
// until the drain finds it answering and stores each record once.
func TestALedgerThatHangsDoesNotHoldSettlements(t *testing.T) {
	ctx := context.Background()
	now := utc(t, "2026-09-08T12:00:00Z")
	se, gate := newGatedSpendEnv(t, newEnv(t, false), now)
	c := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyMonth: "10"}}
	sp := c.spendAt(t, now)
	holds := []string{se.admit(t, sp).hold, se.admit(t, sp).hold}

	gate.Stall()
	for _, h := range holds {
		st, _ := se.settle(t, h, sp, "0.10", tokens.Kinds{Input: 1000})
		require.Equal(t, http.StatusOK, st)
	}
	n, err := se.cache.OutboxLen(ctx, spendcache.TeamOf(c.team))
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	got, _ := se.counter(t, c.team, spend.KeyMonth, "k-1", sp.Month)
	require.Equal(t, usdAmount(t, "0.20"), got)
	require.True(t, se.srv.ledgerDown.Load(), "after the first timeout the ledger is not tried per settlement")

	gate.Open()
	moved, left, err := se.srv.DrainOutbox(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, moved)
	require.Zero(t, left)
	require.False(t, se.srv.ledgerDown.Load())
	var records int
	require.NoError(t, se.pool.QueryRow(ctx, "SELECT count(*) FROM inference_records WHERE team = $1", c.team).Scan(&records))
	require.Equal(t, 2, records)
}

// A service without a ledger stores no limit and no balance: a spend part
// that only asks for the ledger's (fleet, no limit of its own) is answered
// checked with nothing applying, while one that carries a limit is still
// answered unchecked, so the filter never passes a limit unchecked.
func TestWithoutALedgerAFleetOnlySpendPartIsCheckedAndALimitIsNot(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			now := utc(t, "2026-09-08T12:00:00Z")
			fleetOnly := spender{team: uniq("team"), key: "k-1"}.spendAt(t, now)
			fleetOnly.Fleet = true
			plan := limit.Plan{Requests: []limit.Op{reqOp(uniq("req"), "api_key", minute(100))}, Spend: fleetOnly}
			o, vd, err := e.store.AdmitSpend(context.Background(), plan, newHoldID())
			require.NoError(t, err)
			require.True(t, o.Admitted())
			require.NotNil(t, vd, "checked: no ledger, nothing applies")
			require.Nil(t, vd.Refused)
			require.NotEmpty(t, o.Hold.ID, "the settlement names its hold")

			limited := spender{team: uniq("team"), key: "k-1", limits: map[spend.Slot]string{spend.KeyDay: "1.00"}}.spendAt(t, now)
			limited.Fleet = true
			plan.Spend = limited
			_, vd, err = e.store.AdmitSpend(context.Background(), plan, newHoldID())
			require.NoError(t, err)
			require.Nil(t, vd, "a limit of its own is never answered checked without a ledger")
		})
	}
}
