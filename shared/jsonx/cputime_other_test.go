//go:build !linux

package jsonx

import "testing"

func measureCPU(b *testing.B, bytes int, body func()) {
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	for b.Loop() {
		body()
	}
}
