package core

import (
	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

// metricSet defines counters on first use and remembers their ids, so a
// series that never moves is never defined and a hot series costs one map
// lookup with no string built.
type metricSet struct {
	h   abi.Host
	ids map[series]uint32
}

// series identifies one counter: a family and up to three label values in
// the family's fixed label order.
type series struct {
	family  string
	labels  [3]string
	names   [3]string
	nlabels int
}

func newMetricSet(h abi.Host) *metricSet {
	return &metricSet{h: h, ids: map[series]uint32{}}
}

func mk(family string, pairs ...string) series {
	s := series{family: family}
	for i := 1; i < len(pairs) && s.nlabels < 3; i += 2 {
		s.names[s.nlabels], s.labels[s.nlabels] = pairs[i-1], pairs[i]
		s.nlabels++
	}
	return s
}

// count adds delta to a counter; Envoy rejects a non-positive increment.
func (m *metricSet) count(s series, delta int64) {
	if delta <= 0 {
		return
	}
	id, ok := m.ids[s]
	if !ok {
		pairs := make([]string, 0, 2*s.nlabels)
		for i := 0; i < s.nlabels; i++ {
			pairs = append(pairs, s.names[i], s.labels[i])
		}
		var st abi.Status
		id, st = m.h.DefineMetric(abi.MetricCounter, metrics.Name(s.family, pairs...))
		if st != abi.StatusOK {
			return
		}
		m.ids[s] = id
	}
	m.h.IncrementMetric(id, delta)
}

func metricRedisUnavailable(dimension, action string) series {
	return mk(metrics.RedisUnavailable, metrics.LabelDimension, dimension, metrics.LabelAction, action)
}

// tokens records a token movement on one hold entry: the period series per
// Limit and the aggregate series summed over the periods.
func (m *metricSet) tokens(e sharedstore.HoldEntry, outcome string, amount int64) {
	if amount <= 0 || e.Kind != sharedstore.KindTokens {
		return
	}
	for _, l := range e.Limits {
		m.count(mk(metrics.TokenBudgetPeriodTokens,
			metrics.LabelDimension, e.Dimension, metrics.LabelBudget, l.Budget, metrics.LabelOutcome, outcome), amount)
		m.count(mk(metrics.TokenBudgetTokens,
			metrics.LabelDimension, e.Dimension, metrics.LabelOutcome, outcome), amount)
	}
}

// refusal records one refusal under its families.
func (m *metricSet) refusal(r sharedstore.Refusal, limitType string) {
	m.count(mk(metrics.Exceeded, metrics.LabelLimitType, limitType), 1)
	if r.Kind != sharedstore.KindTokens {
		return
	}
	m.count(mk(metrics.TokenBudgetRefusals, metrics.LabelDimension, r.Dimension), 1)
	m.count(mk(metrics.TokenBudgetPeriodRefusal,
		metrics.LabelDimension, r.Dimension, metrics.LabelBudget, r.Budget), 1)
}

func (m *metricSet) skipped(dimension string) {
	m.count(mk(metrics.Skipped, metrics.LabelDimension, dimension), 1)
}

func (m *metricSet) failOpen(reason string) {
	m.count(mk(metrics.FailOpen, metrics.LabelReason, reason), 1)
}

func (m *metricSet) request(outcome string) {
	m.count(mk(metrics.Requests, metrics.LabelOutcome, outcome), 1)
}
