package server

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the service's own Prometheus series. They live on a registry
// the caller passes in, so tests and embedders can run several servers.
type metrics struct {
	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	redisErrors *prometheus.CounterVec
	// series caches each (operation, outcome) pair's counter and histogram:
	// resolving label values hashes them on every call, which showed in the
	// service's profile. The pairs are a small fixed set.
	series sync.Map // [2]string -> *opSeries
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
	reg.MustRegister(m.requests, m.latency, m.redisErrors)
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
