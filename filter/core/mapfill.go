package core

import (
	"github.com/tokenbudget/tokenbudget/filter/abi"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// mapFill is the rate_limit_bucket_map_fill_percent gauge of each bucket-map
// family (token_budget, token_budget_day, requests): how full the map that
// last made a bucket is, in percent of max_buckets. At 100 new identities
// take the map's reusable slots in place of buckets that are whole
// (sharedstore/local), and rate_limit_skipped_total counts the ones no slot
// could take. The store hears the counts only when it makes a bucket, so
// the gauge costs nothing on a request whose buckets exist.
type mapFill struct {
	h   abi.Host
	ids map[string]uint32 // family → gauge id+1
}

func (m *mapFill) record(family string, entries, ceiling int64) {
	if ceiling <= 0 {
		return
	}
	if m.ids == nil {
		m.ids = make(map[string]uint32, 3)
	}
	id := m.ids[family]
	if id == 0 {
		hostID, st := m.h.DefineMetric(abi.MetricGauge, metrics.Name(metrics.BucketMapFill, metrics.LabelDimension, family))
		if st != abi.StatusOK {
			return
		}
		id = hostID + 1
		m.ids[family] = id
	}
	m.h.RecordMetric(id-1, uint64(min(max(entries, 0)*100/ceiling, 100)))
}
