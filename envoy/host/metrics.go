package host

import (
	"errors"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Metric types of the proxy-wasm ABI.
const (
	metricCounter   = 0
	metricGauge     = 1
	metricHistogram = 2

	metricTypeMask    = 3
	metricIDIncrement = 4
)

// histogramBounds are Envoy's default histogram bucket bounds.
var histogramBounds = []float64{0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000}

type metric struct {
	name    string // full name, "wasmcustom.<name>"
	typ     uint32
	value   int64
	count   uint64
	sum     float64
	buckets []uint64
}

// metricStore is process-wide in Envoy (one stats store); here one per Host, shared by all workers.
type metricStore struct {
	mu     sync.Mutex
	byName map[string]*metric
}

func newMetricStore() *metricStore { return &metricStore{byName: map[string]*metric{}} }

func hostDefineMetric(v *vm, s []uint64) {
	typ := uint32(s[0])
	if typ > metricHistogram {
		s[0] = uint64(statusBadArgument)
		return
	}
	name, ok := v.readString(uint32(s[1]), uint32(s[2]))
	if !ok {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	full := "wasmcustom." + name
	ms := v.h.metrics
	ms.mu.Lock()
	key := strconv.Itoa(int(typ)) + full
	m, ok := ms.byName[key]
	if !ok {
		m = &metric{name: full, typ: typ}
		if typ == metricHistogram {
			m.buckets = make([]uint64, len(histogramBounds))
		}
		ms.byName[key] = m
	}
	ms.mu.Unlock()
	// Envoy keeps one id sequence per metric type and VM, stepping by 4 from the type, so the
	// low two bits say the type: counters 4, 8, ..., gauges 5, 9, ..., histograms 6, 10, ...
	// Every definition gets a new id, even for a name already defined.
	v.nextMetric[typ] += metricIDIncrement
	id := v.nextMetric[typ]
	v.metricIDs[id] = m
	if !v.putU32(uint32(s[3]), id) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(statusOK)
}

// lookupMetric finds a metric the way Envoy does: the id's low bits name the type, and the id
// must have been defined as that type on this VM.
func (v *vm) lookupMetric(id uint32) *metric {
	m, ok := v.metricIDs[id]
	if !ok || m.typ != id&metricTypeMask {
		return nil
	}
	return m
}

func hostIncrementMetric(v *vm, s []uint64) {
	id := uint32(s[0])
	typ := id & metricTypeMask
	if typ != metricCounter && typ != metricGauge {
		s[0] = uint64(statusBadArgument)
		return
	}
	m := v.lookupMetric(id)
	if m == nil {
		s[0] = uint64(statusNotFound)
		return
	}
	delta := int64(s[1])
	ms := v.h.metrics
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if typ == metricCounter && delta <= 0 {
		s[0] = uint64(statusBadArgument)
		return
	}
	m.value += delta
	s[0] = uint64(statusOK)
}

func hostRecordMetric(v *vm, s []uint64) {
	m := v.lookupMetric(uint32(s[0]))
	if m == nil {
		s[0] = uint64(statusNotFound)
		return
	}
	val := s[1]
	ms := v.h.metrics
	ms.mu.Lock()
	defer ms.mu.Unlock()
	switch m.typ {
	case metricCounter:
		m.value += int64(val)
	case metricGauge:
		m.value = int64(val)
	case metricHistogram:
		m.count++
		m.sum += float64(val)
		for i, b := range histogramBounds {
			if float64(val) <= b {
				m.buckets[i]++
			}
		}
	}
	s[0] = uint64(statusOK)
}

func hostGetMetric(v *vm, s []uint64) {
	id := uint32(s[0])
	typ := id & metricTypeMask
	if typ != metricCounter && typ != metricGauge {
		s[0] = uint64(statusBadArgument)
		return
	}
	m := v.lookupMetric(id)
	if m == nil {
		s[0] = uint64(statusNotFound)
		return
	}
	ms := v.h.metrics
	ms.mu.Lock()
	val := m.value
	ms.mu.Unlock()
	if !v.putU64(uint32(s[1]), uint64(val)) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	s[0] = uint64(statusOK)
}

// Metric returns a counter's or gauge's value (a histogram's sample count) by name, with or
// without the "wasmcustom." prefix.
func (h *Host) Metric(name string) (int64, bool) {
	if !strings.HasPrefix(name, "wasmcustom.") {
		name = "wasmcustom." + name
	}
	h.metrics.mu.Lock()
	defer h.metrics.mu.Unlock()
	for _, typ := range []string{"0", "1", "2"} {
		if m, ok := h.metrics.byName[typ+name]; ok {
			if m.typ == metricHistogram {
				return int64(m.count), true
			}
			return m.value, true
		}
	}
	return 0, false
}

type tagRule struct {
	name string
	re   *regexp.Regexp
}

func compileTags(tags []StatsTag) ([]tagRule, error) {
	out := make([]tagRule, 0, len(tags))
	for _, t := range tags {
		re, err := regexp.Compile(t.Regex)
		if err != nil {
			return nil, errors.New("envoy/host: stats_tags " + t.TagName + ": " + err.Error())
		}
		if re.NumSubexp() < 1 {
			return nil, errors.New("envoy/host: stats_tags " + t.TagName + ": regex needs a capture group")
		}
		out = append(out, tagRule{name: t.TagName, re: re})
	}
	return out, nil
}

// extractTags applies stats_tags like Envoy's TagExtractorImpl: the first capture group is cut out
// of the name and the nested group (or the first one, if there is only one) is the tag value.
func extractTags(name string, rules []tagRule) (string, [][2]string) {
	var tags [][2]string
	for _, r := range rules {
		m := r.re.FindStringSubmatchIndex(name)
		if m == nil || m[2] < 0 {
			continue
		}
		vs, ve := m[2], m[3]
		if len(m) >= 6 && m[4] >= 0 {
			vs, ve = m[4], m[5]
		}
		tags = append(tags, [2]string{r.name, name[vs:ve]})
		name = name[:m[2]] + name[m[3]:]
	}
	return name, tags
}

func promName(n string) string {
	var b strings.Builder
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9' && i > 0) {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func promLabels(tags [][2]string, extra ...[2]string) string {
	all := append(append([][2]string(nil), tags...), extra...)
	if len(all) == 0 {
		return ""
	}
	parts := make([]string, len(all))
	for i, t := range all {
		parts[i] = promName(t[0]) + "=\"" + strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`).Replace(t[1]) + "\""
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func fmtFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// PrometheusText renders the plugin's metrics as Envoy's /stats/prometheus does for the
// wasmcustom namespace: tags extracted by the stats_tags rules (matched against the full
// "wasmcustom." name), the namespace stripped, no "envoy_" prefix.
func (h *Host) PrometheusText() string {
	type series struct {
		labels string
		m      metric
	}
	families := map[string][]series{}
	types := map[string]uint32{}
	h.metrics.mu.Lock()
	for _, m := range h.metrics.byName {
		name, tags := extractTags(m.name, h.tags)
		name = promName(strings.TrimPrefix(name, "wasmcustom."))
		cp := *m
		cp.buckets = append([]uint64(nil), m.buckets...)
		families[name] = append(families[name], series{labels: promLabels(tags), m: cp})
		types[name] = m.typ
	}
	h.metrics.mu.Unlock()
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		ss := families[n]
		sort.Slice(ss, func(i, j int) bool { return ss[i].labels < ss[j].labels })
		switch types[n] {
		case metricCounter:
			b.WriteString("# TYPE " + n + " counter\n")
		case metricGauge:
			b.WriteString("# TYPE " + n + " gauge\n")
		default:
			b.WriteString("# TYPE " + n + " histogram\n")
		}
		for _, s := range ss {
			if s.m.typ != metricHistogram {
				b.WriteString(n + s.labels + " " + strconv.FormatInt(s.m.value, 10) + "\n")
				continue
			}
			_, tags := extractTags(s.m.name, h.tags)
			for i, bound := range histogramBounds {
				b.WriteString(n + "_bucket" + promLabels(tags, [2]string{"le", fmtFloat(bound)}) + " " + strconv.FormatUint(s.m.buckets[i], 10) + "\n")
			}
			b.WriteString(n + "_bucket" + promLabels(tags, [2]string{"le", "+Inf"}) + " " + strconv.FormatUint(s.m.count, 10) + "\n")
			b.WriteString(n + "_sum" + s.labels + " " + fmtFloat(s.m.sum) + "\n")
			b.WriteString(n + "_count" + s.labels + " " + strconv.FormatUint(s.m.count, 10) + "\n")
		}
	}
	return b.String()
}
