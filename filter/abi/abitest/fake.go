// Package abitest is a native, in-memory abi.Host with Envoy's semantics
// (shared data CAS, header maps, buffers, metrics, local responses, callouts,
// a settable clock), so the filter core can be unit-tested without wasm, with
// -race and coverage. It records what the plugin did for assertions.
package abitest

import (
	"strings"
	"sync"
	"time"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// LogEntry is one Log call.
type LogEntry struct {
	Level abi.LogLevel
	Msg   string
}

// LocalResponse is one SendLocalResponse call.
type LocalResponse struct {
	Status  int
	Details string
	Body    []byte
	Headers [][2]string
}

// HTTPCall is one accepted callout.
type HTTPCall struct {
	Token     uint32
	Cluster   string
	Headers   [][2]string
	Body      []byte
	TimeoutMs uint32
}

// Continue is one ContinueStream call with the context it applied to.
type Continue struct {
	ContextID uint32
	Stream    abi.StreamType
}

type metric struct {
	name    string
	typ     abi.MetricType
	value   int64
	records []uint64
}

// Fake is one VM's view of the host. The zero value is not usable; call
// New. It is safe for concurrent use, though one VM is single-threaded.
type Fake struct {
	mu         sync.Mutex
	shared     *SharedData
	now        int64
	properties map[string][]byte
	headers    map[abi.MapType][][2]string
	buffers    map[abi.BufferType][]byte
	failures   map[string]abi.Status
	clusters   map[string]bool
	logs       []LogEntry
	responses  []LocalResponse
	calls      []HTTPCall
	continues  []Continue
	lastToken  uint32
	effective  uint32
	tickMs     uint32
	metrics    map[uint32]*metric
	metricIDs  map[string]uint32
	statusCode uint32
	statusMsg  string
	scratch    []byte // what the last scratch read returned
}

var _ abi.Host = (*Fake)(nil)

// New returns a host using shared for shared data (a fresh map when nil),
// with the clock at 2026-01-01T00:00:00Z and no header maps or buffers
// available.
func New(shared *SharedData) *Fake {
	if shared == nil {
		shared = NewSharedData()
	}
	return &Fake{
		shared:     shared,
		now:        time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		properties: map[string][]byte{},
		headers:    map[abi.MapType][][2]string{},
		buffers:    map[abi.BufferType][]byte{},
		failures:   map[string]abi.Status{},
		metrics:    map[uint32]*metric{},
		metricIDs:  map[string]uint32{},
	}
}

// Shared returns the shared-data map this host uses.
func (f *Fake) Shared() *SharedData { return f.shared }

// Fail makes every later call of the named Host method (e.g.
// "SetSharedData", "HTTPCall") return st without effect; StatusOK ends it.
func (f *Fake) Fail(method string, st abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st == abi.StatusOK {
		delete(f.failures, method)
		return
	}
	f.failures[method] = st
}

// failed reports an injected failure; the caller holds mu.
func (f *Fake) failed(method string) (abi.Status, bool) {
	st, ok := f.failures[method]
	return st, ok
}

// SetNow sets the clock NowNanos reads.
func (f *Fake) SetNow(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t.UnixNano()
}

// Advance moves the clock.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now += int64(d)
}

// NowNanos implements abi.Host.
func (f *Fake) NowNanos() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Log implements abi.Host.
func (f *Fake) Log(level abi.LogLevel, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, LogEntry{Level: level, Msg: msg})
}

// Logs returns every message logged so far.
func (f *Fake) Logs() []LogEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]LogEntry(nil), f.logs...)
}

// Logged reports whether any message at level or above contains substr.
func (f *Fake) Logged(level abi.LogLevel, substr string) bool {
	for _, e := range f.Logs() {
		if e.Level >= level && strings.Contains(e.Msg, substr) {
			return true
		}
	}
	return false
}

// SetProperty makes GetProperty(path...) return value.
func (f *Fake) SetProperty(value []byte, path ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.properties[strings.Join(path, "\x00")] = append([]byte(nil), value...)
}

// SetFilterState implements abi.Host: the value reads back as property
// name, as in Envoy (and FilterState returns it).
func (f *Fake) SetFilterState(name string, value []byte) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("SetFilterState"); ok {
		return st
	}
	f.properties[name] = append([]byte(nil), value...)
	return abi.StatusOK
}

// FilterState is what the filter stored under name, if anything.
func (f *Fake) FilterState(name string) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.properties[name]
	return v, ok
}

// GetProperty implements abi.Host; an unset path is StatusNotFound.
func (f *Fake) GetProperty(path ...string) ([]byte, abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("GetProperty"); ok {
		return nil, st
	}
	v, ok := f.properties[strings.Join(path, "\x00")]
	if !ok {
		return nil, abi.StatusNotFound
	}
	return append([]byte(nil), v...), abi.StatusOK
}

// SetStatus sets what GetStatus returns (Envoy: 11 "reset" after a failed
// callout).
func (f *Fake) SetStatus(code uint32, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCode, f.statusMsg = code, msg
}

// GetStatus implements abi.Host.
func (f *Fake) GetStatus() (uint32, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusCode, f.statusMsg
}

// GetSharedData implements abi.Host.
func (f *Fake) GetSharedData(key string) ([]byte, uint32, abi.Status) {
	f.mu.Lock()
	st, failed := f.failed("GetSharedData")
	f.mu.Unlock()
	if failed {
		return nil, 0, st
	}
	return f.shared.Get(key)
}

// SetSharedData implements abi.Host.
func (f *Fake) SetSharedData(key string, value []byte, cas uint32) abi.Status {
	f.mu.Lock()
	st, failed := f.failed("SetSharedData")
	f.mu.Unlock()
	if failed {
		return st
	}
	return f.shared.Set(key, value, cas)
}

// SetTickPeriod implements abi.Host.
func (f *Fake) SetTickPeriod(ms uint32) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tickMs = ms
	return abi.StatusOK
}

// TickPeriod returns the last period set, in milliseconds.
func (f *Fake) TickPeriod() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tickMs
}
