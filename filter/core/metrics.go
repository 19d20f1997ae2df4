package core

import (
	"math"

	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/exchange"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// metricSet defines counters on first use and remembers them, so a series
// that never moves is never defined and a hot series costs one map lookup
// with no string built. The series every admitted request moves (token
// movements per dimension, period and outcome; the admitted count) are also
// remembered by position, so the hot path hashes nothing: in the VM a map
// lookup keyed by seven strings cost more than the host call.
//
// It is the exchanges' exchange.Facts: each fact is counted by one call,
// with no adapter between.
//
// Increments are summed in the VM and handed to the host by flush, which
// the root calls on its tick and when it is done: Envoy's stats are read by
// a scrape, so a delay of one tick is invisible, while an increment per
// series per request was a third of the host calls a request made.
type metricSet struct {
	h abi.Host
	// ids maps a series to its local index (below).
	ids map[series]uint32

	// hostIDs and pending are indexed by local index: the host's metric id
	// and the increment not yet handed to it. dirty lists the local indexes
	// whose pending is not zero, each once.
	hostIDs []uint32
	pending []int64
	dirty   []uint32

	// period and total hold local index+1 of the token series (0: not
	// defined yet), indexed by dimension value, token period (tokenPeriod)
	// and outcome as numbered below.
	period   [len(limit.Dimensions) + 1][2][exchange.NumTokenMovements]uint32
	total    [len(limit.Dimensions) + 1][exchange.NumTokenMovements]uint32
	admitted uint32
}

// tokenPeriod is a token bucket's period as an index of metricSet.period:
// minute 0, day 1; -1 for a period no token bucket has.
func tokenPeriod(p limit.Period) int {
	switch p {
	case limit.PeriodMinute:
		return 0
	case limit.PeriodDay:
		return 1
	}
	return -1
}

// dimensionIndex is d as an index of metricSet.period and total; -1 for a
// value outside the named dimensions.
func dimensionIndex(d limit.Dimension) int {
	if !d.Valid() {
		return -1
	}
	return int(d)
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
	if i, ok := m.define(s); ok {
		m.add(i, delta)
	}
}

// hit adds delta to the series remembered at slot, without building its
// name; false (slot nil or not yet defined) leaves it to countAt.
func (m *metricSet) hit(slot *uint32, delta int64) bool {
	if slot == nil || *slot == 0 {
		return false
	}
	if delta > 0 {
		m.add(*slot-1, delta)
	}
	return true
}

// bump adds delta to the series remembered at slot when that needs no call:
// the series is defined, has moved since the last flush and the sum does not
// wrap (pending sums are never negative, delta is positive). It is small
// enough for the compiler to put in line, and in the VM the calls of hit and
// add cost more than the sums, a dozen times a request; false leaves it to
// hit.
func (m *metricSet) bump(slot *uint32, delta int64) bool {
	if slot == nil || *slot == 0 {
		return false
	}
	p := &m.pending[*slot-1]
	if *p == 0 || *p+delta <= *p {
		return false
	}
	*p += delta
	return true
}

// countAt is count for a series remembered by position: *slot holds its
// local index+1 once defined. A nil slot is a series the fast path does not
// know.
func (m *metricSet) countAt(slot *uint32, s series, delta int64) {
	if slot == nil {
		m.count(s, delta)
		return
	}
	if delta <= 0 {
		return
	}
	if *slot == 0 {
		i, ok := m.define(s)
		if !ok {
			return
		}
		*slot = i + 1
	}
	m.add(*slot-1, delta)
}

// add records a positive increment of the series at local index i. A sum
// that would overflow is handed to the host first, so the host sees the
// same increments, wrapping the same way, as one call per increment would.
func (m *metricSet) add(i uint32, delta int64) {
	p := m.pending[i]
	switch {
	case p == 0:
		m.dirty = append(m.dirty, i)
	case p > math.MaxInt64-delta:
		m.h.IncrementMetric(m.hostIDs[i], p)
		p = 0
	}
	m.pending[i] = p + delta
}

// flush hands every pending increment to the host, one call per series
// that moved since the last flush.
func (m *metricSet) flush() {
	for _, i := range m.dirty {
		m.h.IncrementMetric(m.hostIDs[i], m.pending[i])
		m.pending[i] = 0
	}
	m.dirty = m.dirty[:0]
}

// define returns the local index of a series, defining it on first use;
// false when the host refused the definition (it is tried again next time).
func (m *metricSet) define(s series) (uint32, bool) {
	i, ok := m.ids[s]
	if !ok {
		pairs := make([]string, 0, 2*s.nlabels)
		for i := 0; i < s.nlabels; i++ {
			pairs = append(pairs, s.names[i], s.labels[i])
		}
		id, st := m.h.DefineMetric(abi.MetricCounter, metrics.Name(s.family, pairs...))
		if st != abi.StatusOK {
			return 0, false
		}
		i = uint32(len(m.hostIDs))
		m.hostIDs = append(m.hostIDs, id)
		m.pending = append(m.pending, 0)
		m.ids[s] = i
	}
	return i, true
}

func metricRedisUnavailable(dimension limit.Dimension, action string) series {
	return mk(metrics.RedisUnavailable, metrics.LabelDimension, dimension.String(), metrics.LabelAction, action)
}

// CountTokens records a token movement on one hold entry: the period series per
// Limit and the aggregate series summed over the periods (amount once per
// Limit, added in one call).
func (m *metricSet) CountTokens(e *limit.HoldEntry, movement exchange.TokenMovement, amount int64) {
	if amount <= 0 || e.Kind != limit.KindTokens {
		return
	}
	// The steady state: every series of the entry has moved since the last
	// flush, so each sum is one add in line. In the VM the general path's
	// frame (its series values, its calls) costs more than the sums.
	i, n := 0, len(e.Limits)
	if d, o := dimensionIndex(e.Dimension), int(movement); d >= 0 && o < exchange.NumTokenMovements {
		for ; i < n; i++ {
			b := tokenPeriod(e.Limits[i].Budget)
			if b < 0 || !m.bump(&m.period[d][b][o], amount) {
				break
			}
		}
		if i == n && n > 0 && amount <= math.MaxInt64/int64(n) && m.bump(&m.total[d][o], amount*int64(n)) {
			return
		}
	}
	m.countTokensFrom(e, movement, amount, i)
}

// countTokensFrom is CountTokens from the entry's Limit i on (the ones before
// it are counted), then its aggregate series.
func (m *metricSet) countTokensFrom(e *limit.HoldEntry, movement exchange.TokenMovement, amount int64, from int) {
	d, o := dimensionIndex(e.Dimension), int(movement)
	known := d >= 0 && o < exchange.NumTokenMovements
	for _, l := range e.Limits[from:] {
		var slot *uint32
		if b := tokenPeriod(l.Budget); known && b >= 0 {
			slot = &m.period[d][b][o]
		}
		if m.bump(slot, amount) || m.hit(slot, amount) {
			continue
		}
		m.countAt(slot, mk(metrics.TokenBudgetPeriodTokens,
			metrics.LabelDimension, e.Dimension.String(), metrics.LabelBudget, l.Budget.String(), metrics.LabelOutcome, movement.String()), amount)
	}
	n := int64(len(e.Limits))
	if n == 0 {
		return
	}
	var slot *uint32
	if known {
		slot = &m.total[d][o]
	}
	if amount > math.MaxInt64/n {
		// The sum would overflow one increment: add it per Limit instead.
		s := mk(metrics.TokenBudgetTokens, metrics.LabelDimension, e.Dimension.String(), metrics.LabelOutcome, movement.String())
		for range n {
			m.count(s, amount)
		}
		return
	}
	if m.bump(slot, amount*n) || m.hit(slot, amount*n) {
		return
	}
	m.countAt(slot, mk(metrics.TokenBudgetTokens, metrics.LabelDimension, e.Dimension.String(), metrics.LabelOutcome, movement.String()), amount*n)
}

// CountRefusal records one refusal under its families.
func (m *metricSet) CountRefusal(r *limit.Refusal, limitType string) {
	m.count(mk(metrics.Exceeded, metrics.LabelLimitType, limitType), 1)
	if r.Kind != limit.KindTokens {
		return
	}
	m.count(mk(metrics.TokenBudgetRefusals, metrics.LabelDimension, r.Dimension.String()), 1)
	m.count(mk(metrics.TokenBudgetPeriodRefusal,
		metrics.LabelDimension, r.Dimension.String(), metrics.LabelBudget, r.Budget.String()), 1)
}

func (m *metricSet) CountShadowRefusal(limitType, dimension string) {
	m.count(mk(metrics.ShadowRefusals, metrics.LabelDimension, dimension, metrics.LabelLimitType, limitType), 1)
}

func (m *metricSet) CountSkipped(dimension string) {
	m.count(mk(metrics.Skipped, metrics.LabelDimension, dimension), 1)
}

func (m *metricSet) CountFailOpen(reason string) {
	m.count(mk(metrics.FailOpen, metrics.LabelReason, reason), 1)
}

func (m *metricSet) CountRequest(outcome exchange.Outcome) {
	if outcome == exchange.OutcomeAdmitted {
		if !m.bump(&m.admitted, 1) && !m.hit(&m.admitted, 1) {
			m.countAt(&m.admitted, mk(metrics.Requests, metrics.LabelOutcome, outcome.String()), 1)
		}
		return
	}
	m.count(mk(metrics.Requests, metrics.LabelOutcome, outcome.String()), 1)
}
