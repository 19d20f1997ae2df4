package abitest

import (
	"strings"

	"github.com/tokenbudget/tokenbudget/filter/abi"
)

// SetHeaders makes map m available with these pairs (names lowercased, as
// Envoy stores them). Maps not set are unavailable: BadArgument, like
// request headers after on_request_headers returned Continue.
func (f *Fake) SetHeaders(m abi.MapType, pairs [][2]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cp := make([][2]string, len(pairs))
	for i, p := range pairs {
		cp[i] = [2]string{strings.ToLower(p[0]), p[1]}
	}
	f.headers[m] = cp
}

// DropHeaders makes map m unavailable again.
func (f *Fake) DropHeaders(m abi.MapType) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.headers, m)
}

// Headers returns map m as the plugin left it; ok is false if unavailable.
func (f *Fake) Headers(m abi.MapType) (pairs [][2]string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.headers[m]
	return append([][2]string(nil), h...), ok
}

// headerMap returns map m or the status for an unavailable or failing one;
// the caller holds mu.
func (f *Fake) headerMap(method string, m abi.MapType) ([][2]string, abi.Status) {
	if st, ok := f.failed(method); ok {
		return nil, st
	}
	h, ok := f.headers[m]
	if !ok {
		return nil, abi.StatusBadArgument
	}
	return h, abi.StatusOK
}

// GetHeader implements abi.Host: the first value, as Envoy returns it.
func (f *Fake) GetHeader(m abi.MapType, name string) (string, abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, st := f.headerMap("GetHeader", m)
	if st != abi.StatusOK {
		return "", st
	}
	name = strings.ToLower(name)
	for _, p := range h {
		if p[0] == name {
			return p[1], abi.StatusOK
		}
	}
	return "", abi.StatusNotFound
}

// GetHeaders implements abi.Host.
func (f *Fake) GetHeaders(m abi.MapType) ([][2]string, abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, st := f.headerMap("GetHeaders", m)
	if st != abi.StatusOK {
		return nil, st
	}
	return append([][2]string(nil), h...), abi.StatusOK
}

// AddHeader implements abi.Host.
func (f *Fake) AddHeader(m abi.MapType, name, value string) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, st := f.headerMap("AddHeader", m)
	if st != abi.StatusOK {
		return st
	}
	f.headers[m] = append(h, [2]string{strings.ToLower(name), value})
	return abi.StatusOK
}

// ReplaceHeader implements abi.Host: every value of name gives way to one.
func (f *Fake) ReplaceHeader(m abi.MapType, name, value string) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, st := f.headerMap("ReplaceHeader", m)
	if st != abi.StatusOK {
		return st
	}
	name = strings.ToLower(name)
	out := h[:0:0]
	replaced := false
	for _, p := range h {
		if p[0] != name {
			out = append(out, p)
		} else if !replaced {
			out = append(out, [2]string{name, value})
			replaced = true
		}
	}
	if !replaced {
		out = append(out, [2]string{name, value})
	}
	f.headers[m] = out
	return abi.StatusOK
}

// RemoveHeader implements abi.Host; removing a missing name is Ok.
func (f *Fake) RemoveHeader(m abi.MapType, name string) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, st := f.headerMap("RemoveHeader", m)
	if st != abi.StatusOK {
		return st
	}
	name = strings.ToLower(name)
	out := h[:0:0]
	for _, p := range h {
		if p[0] != name {
			out = append(out, p)
		}
	}
	f.headers[m] = out
	return abi.StatusOK
}

// SetBufferData makes buffer b available with data (e.g. the buffered request
// body, or a callout's answer). Buffers not set are StatusNotFound.
func (f *Fake) SetBufferData(b abi.BufferType, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.buffers[b] = append([]byte{}, data...)
}

// DropBuffer makes buffer b unavailable.
func (f *Fake) DropBuffer(b abi.BufferType) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.buffers, b)
}

// Buffer returns buffer b as the plugin left it.
func (f *Fake) Buffer(b abi.BufferType) ([]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.buffers[b]
	return append([]byte(nil), d...), ok
}

// GetBuffer implements abi.Host with Envoy's clamping: a start at or past
// the end, or maxSize 0, reads nothing, successfully.
func (f *Fake) GetBuffer(b abi.BufferType, start, maxSize int) ([]byte, abi.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("GetBuffer"); ok {
		return nil, st
	}
	d, ok := f.buffers[b]
	if !ok {
		return nil, abi.StatusNotFound
	}
	if start < 0 || maxSize < 0 {
		return nil, abi.StatusBadArgument
	}
	if start >= len(d) || maxSize == 0 {
		return []byte{}, abi.StatusOK
	}
	end := len(d)
	if maxSize < end-start {
		end = start + maxSize
	}
	return append([]byte(nil), d[start:end]...), abi.StatusOK
}

// SetBuffer implements abi.Host as Envoy does: start 0 replaces the first
// size bytes with data, a start at or past the end appends, anything else
// is StatusBadArgument.
func (f *Fake) SetBuffer(b abi.BufferType, start, size int, data []byte) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("SetBuffer"); ok {
		return st
	}
	d, ok := f.buffers[b]
	if !ok {
		return abi.StatusNotFound
	}
	switch {
	case start < 0 || size < 0:
		return abi.StatusBadArgument
	case start == 0:
		size = min(size, len(d))
		f.buffers[b] = append(append([]byte{}, data...), d[size:]...)
	case start >= len(d):
		f.buffers[b] = append(d, data...)
	default:
		return abi.StatusBadArgument
	}
	return abi.StatusOK
}

// SendLocalResponse implements abi.Host by recording the response.
func (f *Fake) SendLocalResponse(status int, details string, body []byte, headers [][2]string) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("SendLocalResponse"); ok {
		return st
	}
	f.responses = append(f.responses, LocalResponse{
		Status: status, Details: details,
		Body: append([]byte(nil), body...), Headers: append([][2]string(nil), headers...),
	})
	return abi.StatusOK
}

// LocalResponses returns every local response sent so far.
func (f *Fake) LocalResponses() []LocalResponse {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]LocalResponse(nil), f.responses...)
}

// SetEffectiveContext implements abi.Host.
func (f *Fake) SetEffectiveContext(contextID uint32) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("SetEffectiveContext"); ok {
		return st
	}
	f.effective = contextID
	return abi.StatusOK
}

// ContinueStream implements abi.Host by recording which context resumed.
func (f *Fake) ContinueStream(s abi.StreamType) abi.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.failed("ContinueStream"); ok {
		return st
	}
	f.continues = append(f.continues, Continue{ContextID: f.effective, Stream: s})
	return abi.StatusOK
}

// Enter sets the current context, as the host does before each callback
// (it is also the effective context until SetEffectiveContext).
func (f *Fake) Enter(contextID uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.effective = contextID
}

// Continues returns every ContinueStream so far.
func (f *Fake) Continues() []Continue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Continue(nil), f.continues...)
}
