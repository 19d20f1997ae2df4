package core

import "github.com/tokenbudget/tokenbudget/shared/metrics"

// The fleet store retries a settlement or release it could not deliver
// (the service down or answering 503) with backoff for up to ten minutes,
// the VM holding at most remote.MaxWaiting of them, then drops it. What it drops is counted
// here, on every tick, so an operator sees lost settlements and, among
// them, the inference records whose spend the ledger never got.

// countDrops adds what rem's store dropped since the last tick.
func (m *metricSet) countDrops(rem *vmRemote) {
	calls, records := rem.store.Dropped(), rem.store.DroppedRecords()
	m.count(mk(metrics.StoreCallsDropped), int64(calls-rem.dropsSeen[0]))
	m.count(mk(metrics.SpendRecordsDropped), int64(records-rem.dropsSeen[1]))
	rem.dropsSeen = [2]uint64{calls, records}
}
