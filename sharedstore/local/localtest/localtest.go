// Package localtest is an in-memory proxy shared data with Envoy's exact
// semantics (source/extensions/common/wasm/context.cc, SharedData): one
// mutex, one cas counter for every key starting at 1 and skipping 0, cas 0
// writes unconditionally, a non-zero cas must match an existing key's, and a
// missing key is never checked. Native tests run the shared-data store on it
// from many goroutines, the way worker VMs share one Envoy's map.
package localtest

import (
	"sync"

	"github.com/tokenbudget/tokenbudget/sharedstore/local"
)

type entry struct {
	value []byte
	cas   uint32
}

// SharedData is safe for concurrent use; values are copied in and out, as
// the host copies them across the VM boundary.
type SharedData struct {
	mu   sync.Mutex
	next uint32
	data map[string]entry
	// FailGet and FailSet, when set, are returned by every Get or Set: a
	// host that cannot answer.
	FailGet, FailSet error
}

// New returns an empty shared data.
func New() *SharedData { return &SharedData{next: 1, data: map[string]entry{}} }

// NewAt returns an empty shared data whose cas counter starts at next, to
// test what happens near the 32-bit wrap.
func NewAt(next uint32) *SharedData {
	sd := New()
	if next != 0 {
		sd.next = next
	}
	return sd
}

func (s *SharedData) nextCas() uint32 {
	c := s.next
	s.next++
	if s.next == 0 {
		s.next++
	}
	return c
}

// Get returns a copy of the value and its cas, or local.ErrNotFound.
func (s *SharedData) Get(key string) ([]byte, uint32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.FailGet != nil {
		return nil, 0, s.FailGet
	}
	e, ok := s.data[key]
	if !ok {
		return nil, 0, local.ErrNotFound
	}
	return append([]byte(nil), e.value...), e.cas, nil
}

// Set stores a copy of value under Envoy's cas rule.
func (s *SharedData) Set(key string, value []byte, cas uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.FailSet != nil {
		return s.FailSet
	}
	if e, ok := s.data[key]; ok && cas != 0 && cas != e.cas {
		return local.ErrCasMismatch
	}
	s.data[key] = entry{value: append([]byte(nil), value...), cas: s.nextCas()}
	return nil
}

// Keys lists every key, for tests that count buckets.
func (s *SharedData) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.data))
	for k := range s.data {
		keys = append(keys, k)
	}
	return keys
}
