//go:build !wasip1

package spendworker

import "github.com/prometheus/client_golang/prometheus"

// metrics are the worker's series; with no registry they are kept but not
// exported.
type metrics struct {
	estimateError   prometheus.Histogram
	charged         prometheus.Counter
	unpriced        prometheus.Counter
	refreshFailures prometheus.Counter
	lag             prometheus.Gauge
	lockBusy        prometheus.Counter
	aggLockWaits    prometheus.Counter
	aggLockWait     prometheus.Histogram
	dbErrors        prometheus.Counter
	runs            prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		estimateError: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tokenbudget_spend_estimate_error_usd",
			Help:    "Per charged record, the filter's estimate minus the exact charge (USD): positive over-estimates, negative under-estimates.",
			Buckets: []float64{-1, -.1, -.01, -.001, -.0001, 0, .0001, .001, .01, .1, 1},
		}),
		charged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tokenbudget_spend_worker_records_charged_total",
			Help: "Records the worker priced and charged.",
		}),
		unpriced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tokenbudget_spend_worker_records_unpriced_total",
			Help: "Record charge attempts that found no price for the model (the record stays unprocessed).",
		}),
		refreshFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tokenbudget_spend_cache_refresh_failures_total",
			Help: "Team cache refreshes that failed after a commit (repeated by the next run).",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tokenbudget_spend_worker_lag_seconds",
			Help: "Age of the oldest unprocessed record at the end of the last run (0 when none waits).",
		}),
		lockBusy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tokenbudget_spend_worker_lock_waits_total",
			Help: "Team runs that found the team's lock held by another worker and left it to that one.",
		}),
		aggLockWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tokenbudget_spend_worker_aggregate_lock_waits_total",
			Help: "Team batches that had to wait for an aggregate row another transaction held.",
		}),
		aggLockWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tokenbudget_spend_worker_aggregate_lock_wait_seconds",
			Help:    "How long a team batch that had to wait for aggregate row locks waited.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, 1, 5},
		}),
		dbErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tokenbudget_spend_worker_db_errors_total",
			Help: "PostgreSQL calls of the worker that failed.",
		}),
		runs: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tokenbudget_spend_worker_batch_duration_seconds",
			Help:    "Time of one team batch transaction, lock and aggregate row waits included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, 1, 5},
		}),
	}
	if reg != nil {
		reg.MustRegister(m.estimateError, m.charged, m.unpriced, m.refreshFailures, m.lag, m.lockBusy, m.aggLockWaits, m.aggLockWait, m.dbErrors, m.runs)
	}
	return m
}
