package server

import (
	"fmt"
	"os"
	"testing"
)

// mainTB lets the package start its redistest servers once, outside any one
// test, and stop them when TestMain exits: starting Redis Cluster per test
// would dominate the run.
type mainTB struct {
	testing.TB
	cleanups []func()
	skipped  string
	failed   bool
	dir      string
}

func (m *mainTB) Helper()                  {}
func (m *mainTB) Cleanup(f func())         { m.cleanups = append(m.cleanups, f) }
func (m *mainTB) Skipf(f string, a ...any) { m.skipped = fmt.Sprintf(f, a...); panic("skip") }
func (m *mainTB) Fatal(a ...any)           { m.failed = true; fmt.Fprintln(os.Stderr, a...); panic("fatal") }
func (m *mainTB) Fatalf(f string, a ...any) {
	m.failed = true
	fmt.Fprintf(os.Stderr, f+"\n", a...)
	panic("fatal")
}
func (m *mainTB) TempDir() string {
	if m.dir == "" {
		d, err := os.MkdirTemp("", "sharedstore-redis-")
		if err != nil {
			m.Fatal(err)
		}
		m.dir = d
		m.Cleanup(func() { _ = os.RemoveAll(d) })
	}
	return m.dir
}
func (m *mainTB) cleanup() {
	for i := len(m.cleanups) - 1; i >= 0; i-- {
		m.cleanups[i]()
	}
}

func exit(code int) { os.Exit(code) }
