//go:build !wasip1

package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
)

func TestConcurrentWorkersOnOneTeamNeverDoubleCount(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	_, err := s.PutPrices(ctx, at(t, "2026-01-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "1", "1")}, nil)
	require.NoError(t, err)
	base := at(t, "2026-09-01T00:00:00Z")

	t.Run("a run while another holds the team does nothing", func(t *testing.T) {
		insert(t, s, rec("held", "acme", "k", "u", "m", 1000, 0, base, 1))
		holding, release := make(chan struct{}), make(chan struct{})
		a := NewWorker(s, 0)
		a.beforeCommit = func(context.Context, pgx.Tx) error {
			close(holding)
			<-release
			return nil
		}
		done := make(chan Result, 1)
		go func() {
			res, err := a.RunTeam(ctx, "acme")
			if err != nil {
				res.Busy = true // make the assertion below fail
			}
			done <- res
		}()
		<-holding
		// The second run must answer at once, not queue behind the first.
		bctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := NewWorker(s, 0).RunTeam(bctx, "acme")
		cancel()
		close(release)
		require.NoError(t, err)
		require.True(t, res.Busy)
		require.Empty(t, res.Charged)
		got := <-done
		require.False(t, got.Busy)
		require.Len(t, got.Charged, 1)
		require.Equal(t, map[string]money.Amount{"team/acme/month": 1_000_000, "api_key/k/month": 1_000_000,
			"user/u/month": 1_000_000}, aggregates(t, s, "acme", "202609"))
	})

	t.Run("two workers draining one team at once charge each record once", func(t *testing.T) {
		const n = 300
		for i := 0; i < n; i++ {
			insert(t, s, rec(fmt.Sprintf("r%03d", i), "beta", fmt.Sprintf("k%d", i%3), "", "m", 1000, 1000,
				base.Add(time.Duration(i)*time.Minute), 0))
		}
		var mu sync.Mutex
		seen := map[string]int{}
		busy := 0
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for wkr := 0; wkr < 2; wkr++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := NewWorker(s, 7)
				for {
					res, err := w.RunTeam(ctx, "beta")
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					for _, c := range res.Charged {
						seen[c.ID]++
					}
					if res.Busy {
						busy++
					}
					mu.Unlock()
					if !res.Busy && !res.Full {
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Len(t, seen, n)
		for id, c := range seen {
			require.Equal(t, 1, c, id)
		}
		t.Logf("busy answers while the other worker held the team: %d", busy)
		require.Equal(t, int64(n), count(t, pool, "SELECT count(*) FROM usage_charges WHERE team = 'beta'"))
		// 2000 tokens at $1/M is 2,000,000 nano-USD each; keys take every third.
		require.Equal(t, map[string]money.Amount{"team/beta/month": n * 2_000_000, "api_key/k0/month": n / 3 * 2_000_000,
			"api_key/k1/month": n / 3 * 2_000_000, "api_key/k2/month": n / 3 * 2_000_000}, aggregates(t, s, "beta", "202609"))
	})
}

func TestACallStraddlingMonthEndCountsInThePeriodsItStartedIn(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	_, err := s.PutPrices(ctx, at(t, "2026-01-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "1", "1")}, nil)
	require.NoError(t, err)
	// Started a minute and a microsecond before October; the worker runs
	// long after, in October or later (the database clock's now).
	insert(t, s,
		rec("late-sep", "acme", "k", "u", "m", 1000, 0, at(t, "2026-09-30T23:59:00Z"), 0),
		rec("last-us", "acme", "k", "u", "m", 2000, 0, at(t, "2026-09-30T23:59:59.999999Z"), 0),
		rec("first-oct", "acme", "k", "u", "m", 4000, 0, at(t, "2026-10-01T00:00:00Z"), 0))
	require.Len(t, drain(t, NewWorker(s, 0), "acme"), 3)

	tests := []struct {
		period string
		want   map[string]money.Amount
	}{
		{"202609", map[string]money.Amount{"team/acme/month": 3_000_000, "api_key/k/month": 3_000_000, "user/u/month": 3_000_000}},
		{"20260930", map[string]money.Amount{"api_key/k/day": 3_000_000, "user/u/day": 3_000_000}},
		{"202610", map[string]money.Amount{"team/acme/month": 4_000_000, "api_key/k/month": 4_000_000, "user/u/month": 4_000_000}},
		{"20261001", map[string]money.Amount{"api_key/k/day": 4_000_000, "user/u/day": 4_000_000}},
	}
	for _, tt := range tests {
		t.Run(tt.period, func(t *testing.T) {
			require.Equal(t, tt.want, aggregates(t, s, "acme", tt.period))
		})
	}
	_, err = s.Aggregates(ctx, "acme", "2026-09")
	require.ErrorIs(t, err, ErrBadPeriodKey)
}

func TestAPriceChangeAppliesFromItsEffectiveTime(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	change := at(t, "2026-09-15T12:00:00Z")
	old, err := s.PutPrices(ctx, at(t, "2026-09-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "1", "1")}, nil)
	require.NoError(t, err)
	// Put out of order: the list's effective time decides, not when it was stored.
	later, err := s.PutPrices(ctx, at(t, "2026-09-20T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "5", "5")}, nil)
	require.NoError(t, err)
	cur, err := s.PutPrices(ctx, change, map[string]pricing.Entry{"m": flat(t, "3", "3")}, nil)
	require.NoError(t, err)

	tests := []struct {
		id    string
		start time.Time
		list  int64
		want  money.Amount
	}{
		{"first day of the old list", at(t, "2026-09-01T00:00:00Z"), old, 1_000_000},
		{"a microsecond before the change", change.Add(-time.Microsecond), old, 1_000_000},
		{"at the change", change, cur, 3_000_000},
		{"after the change", change.Add(time.Hour), cur, 3_000_000},
		{"after the next list", at(t, "2026-09-25T00:00:00Z"), later, 5_000_000},
	}
	for _, tt := range tests {
		insert(t, s, rec(tt.id, "acme", "", "", "m", 1000, 0, tt.start, 0))
	}
	got := map[string]Charged{}
	for _, c := range drain(t, NewWorker(s, 0), "acme") {
		got[c.ID] = c
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			require.Equal(t, tt.want, got[tt.id].Charge)
			require.Equal(t, tt.list, got[tt.id].PriceListID)
		})
	}
}

// The ledger prices a record's model as the filter does (package
// modelname): a dated snapshot, a provider prefix or another letter case
// of a listed model is priced at that model's entry, never the default,
// so the fleet's charge and the filter's agree.
func TestTheLedgerPricesAModelsSpellingsAtItsEntry(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	def := flat(t, "0.1", "0.1")
	_, err := s.PutPrices(ctx, at(t, "2026-09-01T00:00:00Z"), map[string]pricing.Entry{"gpt-4o": flat(t, "2.5", "10")}, &def)
	require.NoError(t, err)
	when := at(t, "2026-09-02T00:00:00Z")
	for i, model := range []string{"gpt-4o", "gpt-4o-2024-08-06", "openai/gpt-4o", "GPT-4o", "gpt-4omni"} {
		insert(t, s, rec(model, "acme", "", "", model, 1000, 0, when.Add(time.Duration(i)*time.Second), 0))
	}
	got := map[string]money.Amount{}
	for _, c := range drain(t, NewWorker(s, 0), "acme") {
		got[c.ID] = c.Charge
	}
	require.Equal(t, map[string]money.Amount{
		"gpt-4o": 2_500_000, "gpt-4o-2024-08-06": 2_500_000, "openai/gpt-4o": 2_500_000, "GPT-4o": 2_500_000,
		"gpt-4omni": 100_000, // no boundary after gpt-4o: another model, at the default
	}, got)
}

func TestAnUnpricedModelIsLeftUnprocessedWithAnErrorNeverChargedZero(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	_, err := s.PutPrices(ctx, at(t, "2026-09-01T00:00:00Z"), map[string]pricing.Entry{"known": flat(t, "1", "1")}, nil)
	require.NoError(t, err)
	insert(t, s,
		rec("before-any-list", "acme", "k", "", "known", 1000, 0, at(t, "2026-08-31T23:00:00Z"), 7),
		rec("unknown-model", "acme", "k", "", "mystery", 1000, 0, at(t, "2026-09-02T00:00:00Z"), 9),
		rec("known-model", "acme", "k", "", "known", 1000, 0, at(t, "2026-09-02T00:00:01Z"), 1_000_000))
	w := NewWorker(s, 0)
	for run := 1; run <= 2; run++ {
		res, err := w.RunTeam(ctx, "acme")
		require.NoError(t, err)
		require.ElementsMatch(t, []Unpriced{{"before-any-list", "known"}, {"unknown-model", "mystery"}}, res.Unpriced)
		require.Equal(t, int64(run), count(t, pool, "SELECT min(error_count) FROM inference_records WHERE NOT processed"))
		require.Equal(t, int64(2), count(t, pool, "SELECT count(*) FROM inference_records WHERE NOT processed AND last_error = $1", ErrModelNotPriced))
	}
	require.Equal(t, int64(0), count(t, pool, "SELECT count(*) FROM usage_charges WHERE record_id <> 'known-model'"))
	require.Equal(t, map[string]money.Amount{"team/acme/month": 1_000_000, "api_key/k/month": 1_000_000}, aggregates(t, s, "acme", "202609"))
	pend, err := s.PendingEstimates(ctx, "acme", "202609")
	require.NoError(t, err)
	require.Equal(t, map[string]money.Amount{"team/acme/month": 9, "api_key/k/month": 9}, figures(pend))

	// A later list with a default prices what it covers from its time on;
	// the August record is still before every list.
	def := flat(t, "2", "2")
	_, err = s.PutPrices(ctx, at(t, "2026-09-01T12:00:00Z"), map[string]pricing.Entry{"known": flat(t, "1", "1")}, &def)
	require.NoError(t, err)
	res, err := w.RunTeam(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []Unpriced{{"before-any-list", "known"}}, res.Unpriced)
	require.Len(t, res.Charged, 1)
	require.Equal(t, money.Amount(2_000_000), res.Charged[0].Charge)
	require.Equal(t, money.Amount(9-2_000_000), res.Charged[0].EstimateError())
}

func TestEveryAggregateEqualsTheSumOfItsChargesAfterMixedTraffic(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	tier := flat(t, "3", "15")
	long := flat(t, "6", "22.5")
	tier.AboveInputTokens, tier.Tier = 200_000, long.Base
	tier.PerRequest = money.Amount(1_000) // a millionth of a dollar per request
	cached := pricing.Entry{Base: pricing.Rates{Input: usd(t, "2.5"), CachedInput: usd(t, "1.25"),
		CacheWrite: usd(t, "3.125"), CacheWrite1h: usd(t, "5"), Output: usd(t, "10")}}
	models := map[string]pricing.Entry{"tiered": tier, "cached": cached}
	_, err := s.PutPrices(ctx, at(t, "2026-01-01T00:00:00Z"), models, nil)
	require.NoError(t, err)
	table := pricing.NewTable(models, nil)

	rng := rand.New(rand.NewPCG(14, 9))
	teams := []string{"acme", "beta"}
	keys := []string{"", "k1", "k2"}
	users := []string{"", "alice", "bob"}
	names := []string{"tiered", "cached", "unpriced"}
	want := map[string]map[string]money.Amount{} // team → "scope/id/period/key" → sum
	pending := map[string]map[string]money.Amount{}
	add := func(m map[string]map[string]money.Amount, team, k string, v money.Amount) {
		if m[team] == nil {
			m[team] = map[string]money.Amount{}
		}
		m[team][k] += v
	}
	start := at(t, "2026-09-29T00:00:00Z")
	for i := 0; i < 400; i++ {
		r := Record{ID: fmt.Sprintf("h%d", i), Team: teams[rng.IntN(2)], APIKey: keys[rng.IntN(3)], User: users[rng.IntN(3)],
			Model: names[rng.IntN(3)], CallStart: start.Add(time.Duration(rng.IntN(4*24*3600)) * time.Second),
			Usage: tokens.Kinds{Input: rng.Int64N(300_000), CachedInput: rng.Int64N(5000), CacheWrite: rng.Int64N(3000),
				CacheWrite1h: rng.Int64N(1000), Output: rng.Int64N(4000)},
			Estimate: money.Amount(rng.Int64N(5_000_000))}
		ok, err := s.InsertRecord(ctx, r)
		require.NoError(t, err)
		require.True(t, ok)
		if rng.IntN(5) == 0 { // a retried settlement
			ok, err := s.InsertRecord(ctx, r)
			require.NoError(t, err)
			require.False(t, ok)
		}
		day, month, _ := calendar.Both(r.CallStart.UnixNano())
		e, priced := table.Lookup(r.Model)
		cost := pricing.Cost(r.Usage, e)
		for _, sk := range []struct {
			scope, id string
			w         calendar.Window
		}{{"team", r.Team, month}, {"api_key", r.APIKey, day}, {"api_key", r.APIKey, month}, {"user", r.User, day}, {"user", r.User, month}} {
			if sk.id == "" {
				continue
			}
			k := sk.scope + "/" + sk.id + "/" + sk.w.Period.String() + "/" + sk.w.KeyString()
			if priced {
				add(want, r.Team, k, cost)
			} else {
				add(pending, r.Team, k, r.Estimate)
			}
		}
	}
	w := NewWorker(s, 50)
	for _, team := range teams {
		drain(t, w, team)
	}
	periods := []string{"202609", "202610", "20260929", "20260930", "20261001", "20261002"}
	for _, team := range teams {
		gotAgg, gotPend := map[string]money.Amount{}, map[string]money.Amount{}
		for _, p := range periods {
			for k, v := range aggregates(t, s, team, p) {
				gotAgg[k+"/"+p] = v
			}
			fs, err := s.PendingEstimates(ctx, team, p)
			require.NoError(t, err)
			for k, v := range figures(fs) {
				gotPend[k+"/"+p] = v
			}
		}
		require.Equal(t, want[team], gotAgg, team)
		require.Equal(t, pending[team], gotPend, team)
	}
	// And inside the database: no aggregate differs from the sum of the
	// charges of its records.
	require.Equal(t, int64(0), count(t, pool, `
		WITH sums AS (
			SELECT r.team, 'team' AS scope, r.team AS scope_id, 'month' AS period, r.month_key AS period_key, c.charge
				FROM usage_charges c JOIN inference_records r ON r.id = c.record_id
			UNION ALL SELECT r.team, 'api_key', r.api_key_id, 'day', r.day_key, c.charge
				FROM usage_charges c JOIN inference_records r ON r.id = c.record_id WHERE r.api_key_id <> ''
			UNION ALL SELECT r.team, 'api_key', r.api_key_id, 'month', r.month_key, c.charge
				FROM usage_charges c JOIN inference_records r ON r.id = c.record_id WHERE r.api_key_id <> ''
			UNION ALL SELECT r.team, 'user', r.user_id, 'day', r.day_key, c.charge
				FROM usage_charges c JOIN inference_records r ON r.id = c.record_id WHERE r.user_id <> ''
			UNION ALL SELECT r.team, 'user', r.user_id, 'month', r.month_key, c.charge
				FROM usage_charges c JOIN inference_records r ON r.id = c.record_id WHERE r.user_id <> ''
		), expected AS (
			SELECT team, scope, scope_id, period, period_key, sum(charge)::bigint AS amount, count(*) AS charges
			FROM sums GROUP BY 1, 2, 3, 4, 5
		)
		SELECT count(*) FROM expected e FULL JOIN spend_aggregates a USING (team, scope, scope_id, period, period_key)
		WHERE e.amount IS DISTINCT FROM a.amount OR e.charges IS DISTINCT FROM a.charges`))
	require.Equal(t, count(t, pool, "SELECT count(*) FROM inference_records WHERE processed"),
		count(t, pool, "SELECT count(*) FROM usage_charges"))
}

func TestADatabaseThatGoesAwayMidRunLosesNothingOnceItReturns(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	_, err := s.PutPrices(ctx, at(t, "2026-01-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "1", "1")}, nil)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		insert(t, s, rec(fmt.Sprintf("r%d", i), "acme", "k", "u", "m", 1000, 0, at(t, "2026-09-10T00:00:00Z").Add(time.Duration(i)*time.Second), 0))
	}
	admin, err := pgx.Connect(ctx, pgtest.ServerURL())
	require.NoError(t, err)
	defer admin.Close(ctx)

	// The server drops the worker's connection after every write of the
	// run and before its commit.
	w := NewWorker(s, 0)
	w.beforeCommit = func(ctx context.Context, tx pgx.Tx) error {
		pid := tx.Conn().PgConn().PID()
		_, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1, 10000)", int32(pid))
		return err
	}
	_, err = w.RunTeam(ctx, "acme")
	require.Error(t, err)
	require.Equal(t, int64(5), count(t, pool, "SELECT count(*) FROM inference_records WHERE NOT processed"))
	require.Equal(t, int64(0), count(t, pool, "SELECT count(*) FROM usage_charges"))
	require.Equal(t, int64(0), count(t, pool, "SELECT count(*) FROM spend_aggregates"))

	// A failure reported by the transaction itself rolls back alike.
	w.beforeCommit = func(context.Context, pgx.Tx) error { return errors.New("disk full") }
	_, err = w.RunTeam(ctx, "acme")
	require.ErrorContains(t, err, "disk full")
	require.Equal(t, int64(0), count(t, pool, "SELECT count(*) FROM usage_charges"))

	// Back: the next run charges every record once.
	w.beforeCommit = nil
	require.Len(t, drain(t, w, "acme"), 5)
	require.Equal(t, map[string]money.Amount{"team/acme/month": 5_000_000, "api_key/k/month": 5_000_000,
		"user/u/month": 5_000_000}, aggregates(t, s, "acme", "202609"))
	require.Empty(t, drain(t, w, "acme"))
	teams, err := s.PendingTeams(ctx)
	require.NoError(t, err)
	require.Empty(t, teams)
}

func TestPendingEstimatesSumTheUnprocessedRecordsOfEachScope(t *testing.T) {
	ctx := context.Background()
	s, _ := newStore(t)
	insert(t, s,
		rec("a", "acme", "k1", "alice", "m", 1, 1, at(t, "2026-09-10T01:00:00Z"), 100),
		rec("b", "acme", "k1", "", "m", 1, 1, at(t, "2026-09-10T02:00:00Z"), 20),
		rec("c", "acme", "k2", "alice", "m", 1, 1, at(t, "2026-09-11T00:00:00Z"), 3),
		rec("d", "beta", "k1", "alice", "m", 1, 1, at(t, "2026-09-10T00:00:00Z"), 4000))
	tests := []struct {
		team, period string
		want         map[string]money.Amount
	}{
		{"acme", "202609", map[string]money.Amount{"team/acme/month": 123, "api_key/k1/month": 120, "api_key/k2/month": 3, "user/alice/month": 103}},
		{"acme", "20260910", map[string]money.Amount{"api_key/k1/day": 120, "user/alice/day": 100}},
		{"acme", "20260911", map[string]money.Amount{"api_key/k2/day": 3, "user/alice/day": 3}},
		{"acme", "202610", map[string]money.Amount{}},
		{"beta", "202609", map[string]money.Amount{"team/beta/month": 4000, "api_key/k1/month": 4000, "user/alice/month": 4000}},
	}
	for _, tt := range tests {
		t.Run(tt.team+"/"+tt.period, func(t *testing.T) {
			fs, err := s.PendingEstimates(ctx, tt.team, tt.period)
			require.NoError(t, err)
			require.Equal(t, tt.want, figures(fs))
		})
	}
	teams, err := s.PendingTeams(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"acme", "beta"}, teams)
}

// A run that finds an aggregate row locked by another transaction waits
// for it (it never skips or double-counts the charge) and says it waited;
// a run on free rows does not.
func TestARunSaysWhenItWaitedForAnAggregateRowLock(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	_, err := s.PutPrices(ctx, at(t, "2026-01-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "1", "1")}, nil)
	require.NoError(t, err)
	start := at(t, "2026-10-05T12:00:00Z")
	insert(t, s, rec("r1", "acme", "k", "u", "m", 1000, 0, start, 0))
	res, err := NewWorker(s, 0).RunTeam(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, res.Charged, 1)
	require.False(t, res.AggregateLockWaited, "nothing else held the rows")

	// An operator's correction holds the team's monthly aggregate.
	holder, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer holder.Rollback(ctx) //nolint:errcheck // rolled back or committed below
	_, err = holder.Exec(ctx, `SELECT 1 FROM spend_aggregates WHERE team = 'acme' AND scope = 'team' FOR UPDATE`)
	require.NoError(t, err)

	insert(t, s, rec("r2", "acme", "k", "u", "m", 2000, 0, start, 0))
	type run struct {
		res Result
		err error
	}
	done := make(chan run, 1)
	go func() {
		res, err := NewWorker(s, 0).RunTeam(ctx, "acme")
		done <- run{res, err}
	}()
	// Wait until the run is blocked on the row lock, then let it go.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n > 0
	}, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, holder.Commit(ctx))
	r := <-done
	require.NoError(t, r.err)
	res = r.res
	require.True(t, res.AggregateLockWaited)
	require.Positive(t, res.AggregateLockWait)
	require.Len(t, res.Charged, 1)
	require.Equal(t, money.Amount(3_000_000), aggregates(t, s, "acme", "202610")["team/acme/month"], "both charges, once each")
}
