package server

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// metrics are the service's own Prometheus series. They live on a registry
// the caller passes in, so tests and embedders can run several servers.
type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	redisErrors *prometheus.CounterVec
	// The spend path's series.
	scripts     *prometheus.HistogramVec
	spendErrors *prometheus.CounterVec
	dbErrors    *prometheus.CounterVec
	overshoot   *prometheus.HistogramVec
	// The outbox: records waiting for the ledger, and those drained.
	outbox        prometheus.Gauge
	outboxDrained prometheus.Counter
	// series caches each (operation, outcome) pair's counter and histogram:
	// resolving label values hashes them on every call, which showed in the
	// service's profile. The pairs are a small fixed set.
	series sync.Map // [2]string -> *opSeries
	// scriptSeries caches each script's histogram the same way.
	scriptSeries sync.Map // string -> prometheus.Observer
}

type opSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tokenbudget_sharedstore_requests_total",
			Help: "Requests to the sharedstore API by operation and outcome.",
		}, []string{"operation", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tokenbudget_sharedstore_request_duration_seconds",
			Help:    "Time to answer a sharedstore API request, Redis included.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"operation", "outcome"}),
		redisErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tokenbudget_sharedstore_redis_errors_total",
			Help: "Redis calls that failed (unreachable, timed out, script error) by operation.",
		}, []string{"operation"}),
	}
	m.scripts = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tokenbudget_sharedstore_script_duration_seconds",
		Help:    "Time of one Redis script call (admit, admit_spend, spend_preflight, postflight), round trip included; load is a spend cache miss's ledger read.",
		Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .1},
	}, []string{"script"})
	m.spendErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tokenbudget_sharedstore_spend_cache_errors_total",
		Help: "Spend cache failures by stage: preflight (lookup or load failed, answered unavailable), postflight (the counters missed a record until the worker's refresh), outbox (a record neither the ledger nor the outbox could take, answered 503; or one a drain dropped as unreadable).",
	}, []string{"stage"})
	m.dbErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tokenbudget_sharedstore_db_errors_total",
		Help: "PostgreSQL calls of the spend ledger that failed, by operation.",
	}, []string{"operation"})
	m.overshoot = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "tokenbudget_sharedstore_spend_overshoot_usd",
		Help:    "At a spend refusal, how far the usage had gone past the limit (USD), by scope: what concurrent calls admitted before the counters caught up.",
		Buckets: []float64{0, .001, .01, .1, 1, 10, 100, 1000},
	}, []string{"scope"})
	m.outbox = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tokenbudget_sharedstore_spend_outbox_records",
		Help: "Settlement records kept in the Redis outbox for the spend ledger, fleet-wide, as this replica's last drain counted them (every replica reports the same figure).",
	})
	m.outboxDrained = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "tokenbudget_sharedstore_spend_outbox_drained_total",
		Help: "Outbox records this replica moved into the spend ledger (stored, or found already stored).",
	})
	reg.MustRegister(m.requests, m.latency, m.redisErrors, m.scripts, m.spendErrors, m.dbErrors, m.overshoot, m.outbox, m.outboxDrained)
	return m
}

func (m *metrics) observe(op, outcome string, start time.Time) {
	key := [2]string{op, outcome}
	v, ok := m.series.Load(key)
	if !ok {
		v, _ = m.series.LoadOrStore(key, &opSeries{count: m.requests.WithLabelValues(op, outcome), latency: m.latency.WithLabelValues(op, outcome)})
	}
	s := v.(*opSeries)
	s.count.Inc()
	s.latency.Observe(time.Since(start).Seconds())
}

// script observes one script call's latency.
func (m *metrics) script(name string, start time.Time) {
	o, ok := m.scriptSeries.Load(name)
	if !ok {
		o, _ = m.scriptSeries.LoadOrStore(name, m.scripts.WithLabelValues(name))
	}
	o.(prometheus.Observer).Observe(time.Since(start).Seconds())
}

// spendRefusal records the overshoot of a spend refusal: the usage past
// the limit it met (0 when the usage only reached it).
func (m *metrics) spendRefusal(vd *spendcache.Verdict) {
	ex := vd.Refused
	if ex == nil || vd.Balance {
		return
	}
	m.overshoot.WithLabelValues(ex.Slot.Scope().String()).Observe(float64(max(ex.Used-ex.Limit, 0)) / 1e9)
}

// spendLoad observes one spend cache load from the ledger: its time as the
// "load" script, and a failure as a database error.
func (m *metrics) spendLoad(d time.Duration, err error) {
	m.scripts.WithLabelValues("load").Observe(d.Seconds())
	if err != nil {
		m.dbErrors.WithLabelValues("load").Inc()
	}
}
