//go:build !wasip1

// Package spendworker is the settling loop of the fleet spend ledger:
// every interval, team by team, it charges the unprocessed records in
// PostgreSQL (ledger.Worker, one transaction per batch) and then rewrites
// the team's Redis counters of the current periods from the committed
// figures (spendcache.Refresh). The database is never rolled back for a
// failed refresh, and every run refreshes again, with or without new
// charges, so a refresh missed by a crash or a Redis outage heals on the
// next run.
package spendworker

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// Options tune a Worker; zero values take the defaults.
type Options struct {
	// Interval is the time between runs (default 10s).
	Interval time.Duration
	// Batch is the records one transaction charges (ledger.DefaultBatch).
	Batch int
	// MaxBatches bounds the batches one run charges per team (default
	// 20), so one busy team cannot hold the others back for long.
	MaxBatches int
	// Now is the clock of the current periods (default time.Now).
	Now func() time.Time
	// Registry receives the worker's metrics; nil registers none.
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// Worker is the loop over one ledger and one cache.
type Worker struct {
	store *ledger.Ledger
	lw    *ledger.Worker
	cache *spendcache.Cache
	o     Options
	m     *metrics
}

// New builds the loop.
func New(store *ledger.Ledger, cache *spendcache.Cache, o Options) *Worker {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.MaxBatches <= 0 {
		o.MaxBatches = 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Worker{store: store, lw: ledger.NewWorker(store, o.Batch), cache: cache, o: o, m: newMetrics(o.Registry)}
}

// Stats is what one run did.
type Stats struct {
	Teams, Charged, Unpriced, Busy, Refreshed, RefreshFailures int
}

// Run runs RunOnce every interval until ctx ends. A failed run is logged
// and the next one tries again.
func (w *Worker) Run(ctx context.Context) error {
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	for {
		if _, err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.o.Logger.Error("spend worker run failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce charges and refreshes every active team once, in name order.
// A team whose batch failed is not refreshed this run (its figures did not
// move) and the others go on; the error returned is the first failure.
func (w *Worker) RunOnce(ctx context.Context) (st Stats, err error) {
	_, month, ok := calendar.Both(w.o.Now().UnixNano())
	if !ok {
		return st, errs.New("spend worker: clock before 1970")
	}
	teams, err := w.store.ActiveTeams(ctx, month.Key)
	if err != nil {
		w.m.dbErrors.Inc()
		return st, err
	}
	var first error
	unpriced := map[string]int{}
	defer w.logUnpriced(unpriced)
	for _, team := range teams {
		if ctx.Err() != nil {
			return st, ctx.Err()
		}
		st.Teams++
		busy, err := w.charge(ctx, team, &st, unpriced)
		if err != nil {
			w.m.dbErrors.Inc()
			w.o.Logger.Error("spend worker could not charge a team", "team", team, "error", err)
			first = firstErr(first, err)
			continue
		}
		if busy {
			// Another worker holds the team: it refreshes after its commit.
			continue
		}
		if _, err := w.cache.Refresh(ctx, team); err != nil {
			st.RefreshFailures++
			w.m.refreshFailures.Inc()
			w.o.Logger.Warn("spend cache refresh failed; the next run repeats it", "team", team, "error", err)
			continue
		}
		st.Refreshed++
	}
	if at, ok, err := w.store.OldestPending(ctx); err == nil {
		lag := 0.0
		if ok {
			lag = w.o.Now().Sub(at).Seconds()
		}
		w.m.lag.Set(max(lag, 0))
	} else {
		w.m.dbErrors.Inc()
		first = firstErr(first, err)
	}
	return st, first
}

// FixPricesRequest is the request an operator sends to price a model the
// ledger's price list lacks, as the worker's log gives it.
const FixPricesRequest = `PUT /v1/admin/prices {"effective_from":"<RFC 3339, at or before the records' calls>","pricing":{"<model>":{"input":"…","output":"…"}}} (the plugin config's pricing section; a "default" entry prices every model)`

// logUnpriced says once per run, per model, how many of its records found
// no price, and the request that prices them: until then they stay
// pending at their estimates, never charged.
func (w *Worker) logUnpriced(models map[string]int) {
	names := make([]string, 0, len(models))
	for m := range models {
		names = append(names, m)
	}
	sort.Strings(names)
	for _, m := range names {
		w.o.Logger.Warn("spend records wait for a price: the ledger's price list has no entry for their model and no default",
			"model", m, "records", models[m], "fix", FixPricesRequest)
	}
}

// charge runs the team's batches until none is full (at most MaxBatches),
// counting the records of each model it found no price for in unpriced.
func (w *Worker) charge(ctx context.Context, team string, st *Stats, unpriced map[string]int) (busy bool, err error) {
	for i := 0; i < w.o.MaxBatches; i++ {
		start := time.Now()
		res, err := w.lw.RunTeam(ctx, team)
		w.m.runs.Observe(time.Since(start).Seconds())
		if err != nil {
			return false, err
		}
		if res.Busy {
			st.Busy++
			w.m.lockBusy.Inc()
			return true, nil
		}
		for _, c := range res.Charged {
			w.m.estimateError.Observe(float64(c.EstimateError()) / 1e9)
		}
		if res.AggregateLockWaited {
			w.m.aggLockWaits.Inc()
			w.m.aggLockWait.Observe(res.AggregateLockWait.Seconds())
		}
		w.m.charged.Add(float64(len(res.Charged)))
		w.m.unpriced.Add(float64(len(res.Unpriced)))
		st.Charged += len(res.Charged)
		st.Unpriced += len(res.Unpriced)
		for _, u := range res.Unpriced {
			unpriced[u.Model]++
		}
		if !res.Full || len(res.Charged) == 0 {
			return false, nil
		}
	}
	return false, nil
}

func firstErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
