// Package callgrind lets a program tell valgrind's callgrind tool where a
// measured part begins and ends (its client requests ZERO_STATS and
// DUMP_STATS_AT), so an instruction count covers exactly that part, in
// whatever state the rest of the process is. Outside valgrind each request
// is a few no-op instructions.
package callgrind

import (
	"runtime"
	"runtime/debug"
)

// Client request codes: callgrind's tool base ('C', 'T') and its enum.
const (
	toolBase    = 'C'<<24 | 'T'<<16
	zeroStats   = toolBase + 1
	dumpStatsAt = toolBase + 3
)

// ZeroStats discards what callgrind counted so far.
func ZeroStats() { request(zeroStats, 0) }

// DumpStatsAt writes what callgrind counted since the last zero or dump to
// a new profile part whose description names it, and starts counting anew.
func DumpStatsAt(name string) {
	b := make([]byte, len(name)+1) // NUL-terminated for valgrind
	copy(b, name)
	request(dumpStatsAt, uintptrOf(b))
	keepAlive(b)
}

// Count runs f as a measured part named name: the garbage collector runs
// to completion first and is off while f runs, so the part's count holds
// f's own instructions, not a collection that f's allocations happened to
// trigger (which moved a 50-request count by several thousand instructions
// per request from one run to the next).
func Count(name string, f func()) {
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	ZeroStats()
	f()
	DumpStatsAt(name)
}
