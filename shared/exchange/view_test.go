package exchange

import (
	"strings"
	"unsafe"
)

// request is a request as the host would show it: header pairs in order,
// host properties by path, and the buffered body.
type request struct {
	headers [][2]string
	props   map[string]string // path joined with "/"
	body    []byte
	noBody  bool // the host cannot hand the body over
	lent    []byte
	listed  [][2]string
}

// endCallback is the end of the body callback: what Body lent is
// overwritten, as the store's shared-data reads overwrite the scratch
// buffer during admission.
func (r *request) endCallback() {
	for i := range r.lent {
		r.lent[i] = '#'
	}
}

func (r *request) Header(name string) (string, bool) {
	for _, h := range r.headers {
		if h[0] == name {
			return h[1], true
		}
	}
	return "", false
}

// Headers lends the list in one array, as the binding reuses its listing's
// array; endHeaders overwrites it (the strings stay), so an exchange that
// kept the list past the headers callback reads other names.
func (r *request) Headers() [][2]string {
	r.listed = append(r.listed[:0], r.headers...)
	return r.listed
}

// endHeaders is the end of the request headers callback.
func (r *request) endHeaders() {
	for i := range r.listed {
		r.listed[i] = [2]string{"#", "#"}
	}
}

func (r *request) Property(path ...string) ([]byte, bool) {
	v, ok := r.props[strings.Join(path, "/")]
	if !ok {
		return nil, false
	}
	return []byte(v), true
}

// Body lends the body in one buffer, as the binding's scratch read does;
// endCallback overwrites it, so an exchange that kept any of it past the
// body callback reads garbage.
func (r *request) Body(size int) ([]byte, bool) {
	if r.noBody {
		return nil, false
	}
	r.lent = append(r.lent[:0], r.body[:min(size, len(r.body))]...)
	return r.lent, true
}

// response is a response as the host would show it. Like the binding's
// scratch reads, a header value and a chunk read with scratch allowed live
// in one buffer that the next call on the view overwrites (with '#' first),
// so an exchange that kept one past its moment reads garbage in every test.
type response struct {
	headers [][2]string
	chunk   []byte
	scratch []byte
}

func (r *response) reuse(v []byte) []byte {
	for i := range r.scratch {
		r.scratch[i] = '#'
	}
	r.scratch = append(r.scratch[:0], v...)
	return r.scratch
}

func (r *response) Header(name string) (string, bool) {
	for _, h := range r.headers {
		if h[0] == name {
			b := r.reuse([]byte(h[1]))
			return unsafe.String(unsafe.SliceData(b), len(b)), true
		}
	}
	r.reuse(nil)
	return "", false
}

func (r *response) Chunk(size int, scratch bool) ([]byte, bool) {
	c := r.chunk[:min(size, len(r.chunk))]
	if scratch {
		return r.reuse(c), true
	}
	r.reuse(nil)
	return append([]byte(nil), c...), true
}

// countingRequest is a request that counts its property reads by path.
type countingRequest struct {
	*request
	reads map[string]int
}

func (c *countingRequest) Property(path ...string) ([]byte, bool) {
	c.reads[strings.Join(path, "/")]++
	return c.request.Property(path...)
}
