package abitest

import "github.com/tokenbudget/tokenbudget/filter/abi"

var _ abi.ScratchReader = (*Fake)(nil)

// GetSharedDataScratch implements abi.ScratchReader as the wasm binding
// does: the value is copied into one buffer that the next scratch read
// overwrites, so a caller that keeps it sees it change.
func (f *Fake) GetSharedDataScratch(key string) ([]byte, uint32, abi.Status) {
	v, cas, st := f.GetSharedData(key)
	return f.toScratch(v), cas, st
}

// GetBufferScratch implements abi.ScratchReader like GetSharedDataScratch.
func (f *Fake) GetBufferScratch(b abi.BufferType, start, maxSize int) ([]byte, abi.Status) {
	v, st := f.GetBuffer(b, start, maxSize)
	return f.toScratch(v), st
}

func (f *Fake) toScratch(v []byte) []byte {
	if v == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.scratch = append(f.scratch[:0], v...)
	return f.scratch[:len(v):len(v)]
}
