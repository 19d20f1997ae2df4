package host

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// dir is one direction (request or response) of a stream as Envoy's filter manager sees it.
type dir struct {
	headers, trailers Headers
	headersOpen       bool // the filter may read/modify the headers (until it continues them)
	trailersOpen      bool
	headersIn         bool // the proxy delivered headers
	headersReleased   bool
	body              []byte // body held for the filter (its view of HttpRequestBody/ResponseBody)
	unseen            bool   // body arrived while headers were stopped; not shown to the filter yet
	stopAll           bool   // headers callback returned Stop: StopAllIterationAndWatermark
	stopped           bool   // last body callback stopped iteration
	buffering         bool   // StopIterationAndBuffer or ...AndWatermark: next chunks are appended
	watermark         bool   // ...AndWatermark: over the limit means back-pressure, not 413
	eosIn             bool

	outHeaders Headers
	outBody    []byte
	outEOS     bool
}

// Stream is one HTTP stream through the filter. Its methods take the worker's lock, run the
// filter callbacks, apply what the filter asked for after the VM call, and report what the proxy
// must do. Use a Stream from one goroutine at a time (Wait may run while callouts resume it).
type Stream struct {
	h    *Host
	w    *worker
	v    *vm
	root *pctx
	ctx  *pctx
	info StreamInfo

	req, resp   dir
	phase       int // 0 request, 1 response
	local       *LocalResponse
	closed      bool
	passthrough bool // FAIL_OPEN after a trap: the filter is out of the path
	done        bool
	inLog       bool

	props       map[string][]byte
	wake        chan struct{}
	start       time.Time
	respCode    int
	respDetails string
	requestID   string
}

// NewStream starts a stream on a worker VM. Under FAIL_RELOAD a failed VM is rebuilt here; under
// FAIL_CLOSED a stream on a failed VM is answered 503; under FAIL_OPEN it passes untouched.
func (h *Host) NewStream(info StreamInfo) *Stream {
	w := h.pickWorker(info.Worker)
	s := &Stream{h: h, w: w, info: info, wake: make(chan struct{}, 1), start: h.now()}
	h.open.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.vm == nil || w.vm.failed {
		switch h.opts.FailurePolicy {
		case FailOpen:
			s.passthrough = true
			return s
		case FailReload:
			// Envoy rebuilds the VM on the next request (with a 1 s backoff we do not model).
			if w.vm != nil {
				w.vm.close(context.Background())
			}
			w.vm, w.root = nil, nil
			if err := w.start(context.Background()); err != nil {
				h.addLog(w.idx, LevelCritical, "FAIL_RELOAD: "+err.Error())
				s.localReply(503, nil, nil, "wasm_fail_stream", -1, true)
				return s
			}
		default:
			s.localReply(503, nil, nil, "wasm_fail_stream", -1, true)
			return s
		}
	}
	s.v, s.root = w.vm, w.root
	return s
}

func (s *Stream) dirOf(typ int) *dir {
	if typ == 1 {
		return &s.resp
	}
	return &s.req
}

func (s *Stream) ended() bool { return s.done || s.local != nil || s.closed }

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// RequestHeaders delivers the request headers: Envoy creates the stream context here
// (proxy_on_context_create) and calls proxy_on_request_headers.
func (s *Stream) RequestHeaders(h Headers, endOfStream bool) Result {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	d := &s.req
	d.headers, d.headersIn, d.eosIn = h.Clone(), true, endOfStream
	if id, ok := d.headers.Get("x-request-id"); ok {
		s.requestID = id
	}
	if s.ended() || s.passthrough {
		s.releaseAll(d)
		return s.drain(d)
	}
	s.ctx = s.v.newContext(s.root)
	s.ctx.stream = s
	s.root.liveStreams++
	if _, ok := s.v.call(s.ctx, s.v.fn.contextCreate, uint64(s.ctx.id), uint64(s.root.id)); !ok {
		s.onTrap()
		return s.drain(d)
	}
	s.callHeaders(d, s.v.fn.reqHeaders)
	return s.drain(d)
}

// ResponseHeaders delivers the upstream's response headers (proxy_on_response_headers).
func (s *Stream) ResponseHeaders(h Headers, endOfStream bool) Result {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	s.phase = 1
	d := &s.resp
	d.headers, d.headersIn, d.eosIn = h.Clone(), true, endOfStream
	if s.ended() || s.passthrough || s.ctx == nil {
		s.releaseAll(d)
		return s.drain(d)
	}
	s.callHeaders(d, s.v.fn.respHeaders)
	return s.drain(d)
}

func (s *Stream) callHeaders(d *dir, f export) {
	d.headersOpen = true
	r, ok := s.v.call(s.ctx, f, uint64(s.ctx.id), uint64(len(d.headers)), b2u(d.eosIn))
	if !ok {
		d.headersOpen = false
		s.onTrap()
		return
	}
	if uint32(r) == 0 && !s.v.stopNext {
		s.releaseHeaders(d)
		if d.eosIn {
			d.outEOS = true
		}
	} else {
		// Envoy maps a header Stop to StopAllIterationAndWatermark: body is held, not shown.
		d.stopAll = true
	}
	s.v.runActions()
}

func (s *Stream) releaseHeaders(d *dir) {
	d.headersOpen = false
	if d.headersIn && !d.headersReleased {
		d.headersReleased = true
		d.outHeaders = d.headers
	}
}

// RequestBody delivers a request body chunk (proxy_on_request_body with Envoy's buffering).
func (s *Stream) RequestBody(chunk []byte, endOfStream bool) Result {
	return s.body(0, chunk, endOfStream)
}

// ResponseBody delivers a response body chunk (proxy_on_response_body with Envoy's buffering).
func (s *Stream) ResponseBody(chunk []byte, endOfStream bool) Result {
	return s.body(1, chunk, endOfStream)
}

func (s *Stream) body(typ int, chunk []byte, eos bool) Result {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	d := s.dirOf(typ)
	if typ == 1 {
		s.phase = 1
	}
	if eos {
		d.eosIn = true
	}
	if s.ended() || s.passthrough || s.ctx == nil {
		if !s.ended() {
			d.outBody = append(d.outBody, chunk...)
			if eos {
				d.outEOS = true
			}
		}
		return s.drain(d)
	}
	if d.stopAll {
		if d.body == nil {
			d.body = make([]byte, 0, len(chunk))
		}
		d.body = append(d.body, chunk...)
		d.unseen = true
		return s.drain(d)
	}
	if d.buffering {
		d.body = append(d.body, chunk...)
		if !d.watermark && len(d.body) > s.h.opts.BufferLimit {
			s.overLimit(typ)
			return s.drain(d)
		}
	} else {
		d.body = append(make([]byte, 0, len(chunk)), chunk...)
	}
	s.callBody(d, typ)
	s.v.runActions()
	return s.drain(d)
}

func (s *Stream) callBody(d *dir, typ int) {
	f := s.v.fn.reqBody
	if typ == 1 {
		f = s.v.fn.respBody
	}
	d.unseen = false
	r, ok := s.v.call(s.ctx, f, uint64(s.ctx.id), uint64(len(d.body)), b2u(d.eosIn))
	if !ok {
		s.onTrap()
		return
	}
	d.buffering, d.watermark, d.stopped = false, false, false
	if s.v.stopNext {
		r = 3 // a local reply was sent: StopIterationNoBuffer, as cpp-host forces
	}
	switch uint32(r) {
	case 0: // Continue: the buffered body goes on
		d.outBody = append(d.outBody, d.body...)
		d.body = nil
		if d.eosIn {
			d.outEOS = true
		}
	case 1: // StopIterationAndBuffer
		d.buffering, d.stopped = true, true
		if len(d.body) > s.h.opts.BufferLimit {
			s.overLimit(typ)
		}
	case 2: // StopIterationAndWatermark: buffered, flow control instead of 413
		d.buffering, d.watermark, d.stopped = true, true, true
	default: // StopIterationNoBuffer: the chunk is not kept
		d.body = nil
		d.stopped = true
	}
}

// overLimit is Envoy's buffer-limit reply: 413 for a request, 500 for a response (or a reset when
// the response headers already went out).
func (s *Stream) overLimit(typ int) {
	if typ == 0 {
		s.localReply(413, []byte("Payload Too Large"), nil, "request_payload_too_large", -1, false)
		return
	}
	if s.resp.headersReleased {
		s.closeStream()
		return
	}
	s.localReply(500, []byte("Internal Server Error"), nil, "response_payload_too_large", -1, false)
}

// resume is proxy_continue_stream, applied after the VM call like Envoy's continueDecoding /
// continueEncoding.
func (s *Stream) resume(typ int) {
	if s.ended() || s.passthrough {
		return
	}
	d := s.dirOf(typ)
	switch {
	case d.stopAll:
		d.stopAll = false
		s.releaseHeaders(d)
		if d.unseen {
			s.callBody(d, typ) // the held body now reaches the filter
		} else if d.eosIn && d.body == nil {
			d.outEOS = true
		}
	case d.stopped:
		d.stopped, d.buffering, d.watermark = false, false, false
		d.outBody = append(d.outBody, d.body...)
		d.body = nil
		if d.eosIn {
			d.outEOS = true
		}
	}
	s.signal()
}

func (s *Stream) closeStream() {
	if s.ended() {
		return
	}
	s.closed = true
	if s.respDetails == "" {
		s.respDetails = "wasm_close_stream"
	}
	s.signal()
}

// localReply is sendLocalReply: the reply replaces the upstream response and, like in Envoy, runs
// through the encoder path of this same filter (proxy_on_response_headers/body see it) unless it
// is the failure reply (failure_local_reply_sent_).
func (s *Stream) localReply(status int, body []byte, extra Headers, details string, grpc int, failure bool) {
	if s.ended() {
		return
	}
	if s.resp.headersReleased {
		// Response already started: Envoy can only reset.
		s.closeStream()
		return
	}
	hs := Headers{{":status", strconv.Itoa(status)}}
	for _, kv := range extra {
		hs = append(hs, [2]string{strings.ToLower(kv[0]), kv[1]})
	}
	if len(body) > 0 {
		if _, ok := hs.Get("content-type"); !ok {
			hs = append(hs, [2]string{"content-type", "text/plain"})
		}
	}
	hs.set("content-length", strconv.Itoa(len(body)))
	lr := &LocalResponse{Status: status, Headers: hs, Body: body, Details: details, GRPCStatus: grpc}
	s.respCode, s.respDetails = status, details
	if !failure && s.ctx != nil && s.v != nil && !s.v.failed && !s.done {
		s.phase = 1
		d := &s.resp
		*d = dir{headers: hs, headersIn: true, eosIn: len(body) == 0}
		s.local = lr // set first: a second local reply from these callbacks is ignored
		d.headersOpen = true
		_, ok := s.v.call(s.ctx, s.v.fn.respHeaders, uint64(s.ctx.id), uint64(len(hs)), b2u(len(body) == 0))
		d.headersOpen = false
		if ok && len(body) > 0 {
			d.body = append([]byte(nil), body...)
			d.eosIn = true
			s.v.call(s.ctx, s.v.fn.respBody, uint64(s.ctx.id), uint64(len(body)), 1)
		}
		// Envoy would stall a local reply the filter stops; we send what the filter left.
		lr.Headers = d.headers
		if len(body) > 0 {
			lr.Body = d.body
		}
		if st, ok := d.headers.Get(":status"); ok {
			if n, err := strconv.Atoi(st); err == nil {
				lr.Status = n
				s.respCode = n
			}
		}
		d.headersReleased = true
	}
	s.local = lr
	s.signal()
}

// onTrap applies the failure policy to this stream after its VM trapped.
func (s *Stream) onTrap() {
	if s.h.opts.FailurePolicy == FailOpen {
		s.passthrough = true
		s.releaseAll(&s.req)
		if s.phase == 1 {
			s.releaseAll(&s.resp)
		}
		s.signal()
		return
	}
	s.localReply(503, nil, nil, "wasm_fail_stream", -1, true)
}

// releaseAll hands everything held in d to the proxy unchanged.
func (s *Stream) releaseAll(d *dir) {
	if s.local != nil || s.closed {
		return
	}
	d.stopAll, d.stopped, d.buffering = false, false, false
	s.releaseHeaders(d)
	d.outBody = append(d.outBody, d.body...)
	d.body = nil
	if d.eosIn {
		d.outEOS = true
	}
}

func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// drain reports (and forgets) what was released since the last Result.
func (s *Stream) drain(d *dir) Result {
	if s.local != nil {
		return Result{Action: LocalReply, Local: s.local}
	}
	if s.closed {
		return Result{Action: Close}
	}
	r := Result{Headers: d.outHeaders.Clone(), Body: d.outBody, EndOfStream: d.outEOS}
	d.outHeaders, d.outBody, d.outEOS = nil, nil, false
	if d.stopAll || d.stopped {
		r.Action = Pause
	}
	return r
}

// Wait blocks while the filter holds the current direction (headers stopped, or the body stopped
// at end of stream) until it continues, answers locally or closes the stream, or ctx ends
// (then the Result says Pause). It returns everything released meanwhile.
func (s *Stream) Wait(ctx context.Context) Result {
	for {
		s.w.mu.Lock()
		d := s.dirOf(s.phase)
		if s.ended() || s.passthrough || !(d.stopAll || (d.stopped && d.eosIn)) {
			r := s.drain(d)
			s.w.mu.Unlock()
			return r
		}
		s.w.mu.Unlock()
		select {
		case <-ctx.Done():
			s.w.mu.Lock()
			r := s.drain(d)
			s.w.mu.Unlock()
			return r
		case <-s.wake:
		}
	}
}

// Done ends the stream (normal end or reset): proxy_on_log, proxy_on_done, proxy_on_delete, once.
func (s *Stream) Done() {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.done {
		return
	}
	defer s.h.open.Add(-1)
	if s.ctx != nil && !s.v.failed {
		s.inLog = true
		s.v.call(s.ctx, s.v.fn.log, uint64(s.ctx.id))
		s.inLog = false
		s.v.call(s.ctx, s.v.fn.done, uint64(s.ctx.id))
		s.v.call(s.ctx, s.v.fn.delete, uint64(s.ctx.id))
	}
	s.done = true
	if s.ctx != nil {
		s.v.runActions() // actions aimed at this stream are ignored now that it is done
		s.ctx.deleted = true
		delete(s.v.contexts, s.ctx.id)
		s.root.liveStreams--
		if s.root.retired && s.root.liveStreams == 0 && !s.v.failed && s.w.vm == s.v {
			s.v.finishRoot(s.root)
		}
	}
	s.signal()
}

// OpenStreams is how many streams were created and are not yet Done. Once
// it is zero every stream has run on_log, on_done and on_delete, so whatever
// the filter settles or releases at a stream's end has happened: tests wait
// for it instead of racing a proxy that finishes the stream after the client
// read its last byte.
func (h *Host) OpenStreams() int { return int(h.open.Load()) }

// ContextID is the proxy-wasm context id of the stream (0 before RequestHeaders).
func (s *Stream) ContextID() uint32 {
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	if s.ctx == nil {
		return 0
	}
	return s.ctx.id
}

// Worker is the index of the worker VM serving the stream.
func (s *Stream) Worker() int { return s.w.idx }
