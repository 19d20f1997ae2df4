package jsonx

import (
	"runtime"
	"syscall"
	"testing"
)

// The build machine is shared and heavily loaded, so wall-clock ns/op swings
// several-fold between runs. The benchmarks therefore also report the CPU
// time their own thread used (RUSAGE_THREAD), which contention barely moves.
const rusageThread = 1

func threadCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// measureCPU runs body under b.Loop on a locked thread and reports CPU-based
// ns/op and MB/s next to the usual wall-clock figures.
func measureCPU(b *testing.B, bytes int, body func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	start := threadCPU()
	n := 0
	for b.Loop() {
		body()
		n++
	}
	cpu := threadCPU() - start
	if n > 0 && cpu > 0 {
		b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/op")
		b.ReportMetric(float64(bytes)*float64(n)/(float64(cpu)/1e9)/1e6, "cpu-MB/s")
	}
}
