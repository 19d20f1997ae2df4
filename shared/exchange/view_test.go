package exchange

import "strings"

// request is a request as the host would show it: header pairs in order,
// host properties by path, and the buffered body.
type request struct {
	headers [][2]string
	props   map[string]string // path joined with "/"
	body    []byte
	noBody  bool // the host cannot hand the body over
}

func (r *request) Header(name string) (string, bool) {
	for _, h := range r.headers {
		if h[0] == name {
			return h[1], true
		}
	}
	return "", false
}

func (r *request) Headers() [][2]string { return r.headers }

func (r *request) Property(path ...string) ([]byte, bool) {
	v, ok := r.props[strings.Join(path, "/")]
	if !ok {
		return nil, false
	}
	return []byte(v), true
}

func (r *request) Body(size int) ([]byte, bool) {
	if r.noBody {
		return nil, false
	}
	return append([]byte(nil), r.body[:min(size, len(r.body))]...), true
}

// response is a response as the host would show it.
type response struct {
	headers [][2]string
	chunk   []byte
}

func (r *response) Header(name string) (string, bool) {
	for _, h := range r.headers {
		if h[0] == name {
			return h[1], true
		}
	}
	return "", false
}

func (r *response) Chunk(size int, scratch bool) ([]byte, bool) {
	return append([]byte(nil), r.chunk[:min(size, len(r.chunk))]...), true
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
