package host

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Callout ids (cpp-host WasmBase::CalloutType): the type is in the low two bits.
const (
	calloutHTTP      = 0
	calloutIncrement = 4
)

// httpResponse is the callout answer visible during proxy_on_http_call_response.
type httpResponse struct {
	headers, trailers Headers
	body              []byte
}

func hostHTTPCall(v *vm, s []uint64) {
	cluster, ok1 := v.readString(uint32(s[0]), uint32(s[1]))
	hb, ok2 := v.read(uint32(s[2]), uint32(s[3]))
	body, ok3 := v.read(uint32(s[4]), uint32(s[5]))
	tb, ok4 := v.read(uint32(s[6]), uint32(s[7]))
	if !ok1 || !ok2 || !ok3 || !ok4 {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	timeout := int32(uint32(s[8]))
	tokenPtr := uint32(s[9])
	// Malformed pairs are an empty list (then :method, :path, :authority are missing).
	hdrs := decodePairs(hb)
	trailers := decodePairs(tb)
	// cpp-host writes a zero token first, to prove the memory before the call starts.
	if !v.putU32(tokenPtr, 0) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	base, known := v.h.opts.Clusters[cluster]
	method, okM := hdrs.Get(":method")
	path, okP := hdrs.Get(":path")
	authority, okA := hdrs.Get(":authority")
	if timeout < 0 || !known || !okM || !okP || !okA {
		s[0] = uint64(statusBadArgument)
		return
	}
	c := v.effective
	if c == nil {
		s[0] = uint64(statusBadArgument)
		return
	}
	root := c.rootCtx() // the callout belongs to the root context, as in cpp-host
	// Tokens step by 4 from the call type in the low two bits (cpp-host nextHttpCallId): 4, 8,
	// 12, ... per VM.
	v.nextToken += calloutIncrement
	token := v.nextToken
	if !v.putU32(tokenPtr, token) {
		s[0] = uint64(statusInvalidMemoryAccess)
		return
	}
	req, err := http.NewRequest(method, strings.TrimRight(base, "/")+path, bytes.NewReader(append([]byte(nil), body...)))
	if err != nil {
		s[0] = uint64(statusInternalFailure)
		return
	}
	req.Host = authority
	for _, kv := range hdrs {
		if strings.HasPrefix(kv[0], ":") || kv[0] == "content-length" || kv[0] == "host" {
			continue
		}
		req.Header.Add(kv[0], kv[1])
	}
	if len(trailers) > 0 {
		req.Trailer = http.Header{}
		for _, kv := range trailers {
			req.Trailer.Add(kv[0], kv[1])
		}
	}
	h, w, callVM := v.h, v.h.workerOf(v), v
	if w == nil {
		// The canary VM has no worker to deliver the answer on; Envoy's canary is discarded too.
		s[0] = uint64(statusOK)
		return
	}
	h.calls.Add(1)
	go func() {
		defer h.calls.Done()
		ctx := h.callCtx
		var cancel context.CancelFunc
		if timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, time.Duration(timeout)*time.Millisecond)
			defer cancel()
		}
		resp := doCall(h.client, req.WithContext(ctx), h.opts.BufferLimit)
		if h.callCtx.Err() != nil {
			return // host closing: Envoy cancels callouts with the root context
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.vm != callVM || callVM.failed || root.deleted {
			return
		}
		callVM.deliverHTTP(root, token, resp)
	}()
	s[0] = uint64(statusOK)
}

// doCall performs the callout; nil means failure (connect error, reset, timeout, too large).
func doCall(c *http.Client, req *http.Request, limit int) *httpResponse {
	resp, err := c.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil || len(b) > limit {
		return nil
	}
	out := &httpResponse{body: b, headers: Headers{{":status", strconv.Itoa(resp.StatusCode)}}}
	for k, vs := range resp.Header {
		for _, val := range vs {
			out.headers = append(out.headers, [2]string{strings.ToLower(k), val})
		}
	}
	for k, vs := range resp.Trailer {
		for _, val := range vs {
			out.trailers = append(out.trailers, [2]string{strings.ToLower(k), val})
		}
	}
	return out
}

// deliverHTTP calls proxy_on_http_call_response on the root; a failed call is (0,0,0) with
// proxy_get_status giving BrokenConnection "reset", as Envoy's onHttpCallFailure.
func (v *vm) deliverHTTP(root *pctx, token uint32, resp *httpResponse) {
	if resp == nil {
		v.statusCode, v.statusMsg = statusBrokenConnection, "reset"
		v.httpResp = &httpResponse{}
		v.call(root, v.fn.httpResponse, uint64(root.id), uint64(token), 0, 0, 0)
	} else {
		v.statusCode, v.statusMsg = statusOK, ""
		v.httpResp = resp
		v.call(root, v.fn.httpResponse, uint64(root.id), uint64(token), uint64(len(resp.headers)), uint64(len(resp.body)), uint64(len(resp.trailers)))
	}
	v.httpResp = nil
	v.statusCode, v.statusMsg = 0, ""
	if v.failed {
		v.actions = v.actions[:0]
		v.h.failStreams(v)
		return
	}
	v.runActions()
}

func (h *Host) workerOf(v *vm) *worker {
	if v.worker < 0 || v.worker >= len(h.workers) {
		return nil
	}
	return h.workers[v.worker]
}

// failStreams applies the failure policy to the paused streams of a VM that trapped outside a
// stream callback (callout answer, tick), so no stream waits forever.
func (h *Host) failStreams(v *vm) {
	for _, c := range v.contexts {
		if c.stream != nil && !c.stream.ended() {
			c.stream.onTrap()
		}
	}
}
