package abitest

import (
	"sync"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// SharedData is Envoy's shared-data map for one vm_id: one per proxy, shared
// by every worker VM. Give several Fakes the same SharedData to emulate
// worker threads racing on the same keys (it is safe for concurrent use).
type SharedData struct {
	mu      sync.Mutex
	lastCas uint32
	entries map[string]sharedEntry
}

type sharedEntry struct {
	value []byte
	cas   uint32
}

// NewSharedData returns an empty map whose CAS counter starts at 1.
func NewSharedData() *SharedData {
	return &SharedData{entries: map[string]sharedEntry{}}
}

// Get returns a copy of the value and its CAS, or StatusNotFound.
func (s *SharedData) Get(key string) ([]byte, uint32, abi.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[key]
	if !ok {
		return nil, 0, abi.StatusNotFound
	}
	return append([]byte(nil), e.value...), e.cas, abi.StatusOK
}

// Set stores a copy of value as Envoy does: cas 0 is unconditional; a
// non-zero cas that differs from an existing key's gives StatusCasMismatch;
// a missing key takes any cas. Every set draws the next CAS from one
// counter, skipping 0.
func (s *SharedData) Set(key string, value []byte, cas uint32) abi.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[key]; ok && cas != 0 && cas != e.cas {
		return abi.StatusCasMismatch
	}
	s.lastCas++
	if s.lastCas == 0 {
		s.lastCas++
	}
	s.entries[key] = sharedEntry{value: append([]byte(nil), value...), cas: s.lastCas}
	return abi.StatusOK
}

// Len returns how many keys the map holds, to check that buckets are
// bounded.
func (s *SharedData) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}
