package abitest

import "github.com/tokenbudget/tokenbudget/filter/abi"

// DefineMetric implements abi.Host; defining a name again returns its id.
func (f *Fake) DefineMetric(t abi.MetricType, name string) (uint32, abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("DefineMetric"); ok {
		return 0, st
	}
	if t > abi.MetricHistogram {
		return 0, abi.StatusBadArgument
	}
	if id, ok := f.metricIDs[name]; ok {
		if f.metrics[id].typ != t {
			return 0, abi.StatusBadArgument
		}
		return id, abi.StatusOK
	}
	id := uint32(len(f.metrics) + 1)
	f.metrics[id] = &metric{name: name, typ: t}
	f.metricIDs[name] = id
	return id, abi.StatusOK
}

// IncrementMetric implements abi.Host: a counter takes only positive
// deltas (Envoy: BadArgument otherwise), a gauge any, a histogram none.
func (f *Fake) IncrementMetric(id uint32, delta int64) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.metrics[id]
	if !ok {
		return abi.StatusNotFound
	}
	switch {
	case m.typ == abi.MetricCounter && delta > 0, m.typ == abi.MetricGauge:
		m.value += delta
		return abi.StatusOK
	}
	return abi.StatusBadArgument
}

// RecordMetric implements abi.Host: a counter adds, a gauge sets, a
// histogram records.
func (f *Fake) RecordMetric(id uint32, v uint64) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.metrics[id]
	if !ok {
		return abi.StatusNotFound
	}
	switch m.typ {
	case abi.MetricCounter:
		m.value += int64(v)
	case abi.MetricGauge:
		m.value = int64(v)
	default:
		m.records = append(m.records, v)
	}
	return abi.StatusOK
}

// GetMetric implements abi.Host; a histogram has no single value.
func (f *Fake) GetMetric(id uint32) (uint64, abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.metrics[id]
	if !ok {
		return 0, abi.StatusNotFound
	}
	if m.typ == abi.MetricHistogram {
		return 0, abi.StatusBadArgument
	}
	return uint64(m.value), abi.StatusOK
}

// Metric returns a counter's or gauge's value by name.
func (f *Fake) Metric(name string) (int64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.metricIDs[name]
	if !ok {
		return 0, false
	}
	return f.metrics[id].value, true
}

// Histogram returns the values recorded on a histogram by name.
func (f *Fake) Histogram(name string) []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.metricIDs[name]
	if !ok {
		return nil
	}
	return append([]uint64(nil), f.metrics[id].records...)
}
