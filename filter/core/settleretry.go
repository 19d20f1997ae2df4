package core

import (
	"github.com/tokenbudget/tokenbudget/shared/metrics"
	"github.com/tokenbudget/tokenbudget/sharedstore/remote"
)

// The fleet store retries a settlement or release it could not deliver
// (the service down, or unable to write its ledger and answering 503) with
// backoff for a bounded time, then drops it. What it drops is counted
// here, on every tick, so an operator sees lost settlements and, among
// them, the inference records whose spend the ledger never got.

// dropsSeen is, per fleet store of the VM, the drop counts already added
// to the metrics.
var dropsSeen = map[*remote.Store][2]uint64{}

// countDrops adds what s dropped since the last tick.
func (m *metricSet) countDrops(s *remote.Store) {
	seen := dropsSeen[s]
	calls, records := s.Dropped(), s.DroppedRecords()
	m.count(mk(metrics.StoreCallsDropped), int64(calls-seen[0]))
	m.count(mk(metrics.SpendRecordsDropped), int64(records-seen[1]))
	dropsSeen[s] = [2]uint64{calls, records}
}

// forgetDrops forgets a fleet store the VM no longer ticks.
func forgetDrops(s *remote.Store) { delete(dropsSeen, s) }
