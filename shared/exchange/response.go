package exchange

import (
	"strconv"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/estimate"
	"github.com/tokenbudget/tokenbudget/shared/refusal"
	"github.com/tokenbudget/tokenbudget/shared/sse"
	"github.com/tokenbudget/tokenbudget/shared/usage"
)

// ResponseHeaders is the response's headers: the success headers go on,
// and how the answer will be read for settlement is decided here, once.
// buf is a buffer the caller lends for the headers and their values,
// reused by its next exchange once the host has them (nil: a fresh one).
func (x *Exchange) ResponseHeaders(resp Response, endOfStream bool, buf *refusal.HeaderBuffer) {
	switch x.phase {
	case PhaseBody, PhaseAdmitting, PhaseForwarded:
	default:
		return // not metered, or answered here
	}
	if buf == nil {
		buf = &refusal.HeaderBuffer{}
	}
	buf.List = buf.List[:0]
	buf.AppendSuccess(x.levels)
	headers := buf.List
	if sp := &x.hold.Spend; sp.Any() {
		n := len(headers)
		headers = refusal.AppendSpendHeaders(headers, &sp.Policy, &x.spendUsed, sp.Day, sp.Month)
		if len(headers) > n { // the caller's own key limits are shown: so is the entry they are priced at
			headers = refusal.AppendPriceEntry(headers, x.log.priceEntry)
		}
	}
	if x.rt.OpenAIHeaders || x.rt.IETFHeaders {
		headers = refusal.AppendCompatHeaders(headers, x.levels, x.headerStyles(), x.env.Now()/1e9)
	}
	buf.List = headers
	if len(headers) > 0 {
		x.fx.SetResponseHeaders(headers)
	}
	if x.held != holdOpen {
		return
	}
	x.answer = answerBody
	encoded, streamed := false, false
	status, _ := resp.Header(":status")
	if code, err := strconv.Atoi(status); err != nil || code < 200 || code > 299 {
		x.answer = answerFree
	}
	if n := x.rt.CacheHitHeader; n != "" {
		if v, ok := resp.Header(n); ok && strings.EqualFold(v, x.rt.CacheHitValue) {
			x.answer = answerFree
		}
	}
	if ce, ok := resp.Header("content-encoding"); ok && ce != "" && !strings.EqualFold(ce, "identity") {
		encoded = true
	}
	if ct, _ := resp.Header("content-type"); hasPrefixFold(ct, "text/event-stream") {
		streamed = true
		x.split = &sse.Splitter{}
		x.reader = usage.NewStream(x.api, estimate.Text)
	}
	switch {
	case x.answer == answerFree:
	case encoded:
		x.answer = answerEncoded
	case streamed:
		x.answer = answerStream
	}
	if endOfStream {
		x.finish()
	}
}

// forwarding says the answer's bytes pass through the splitter: the
// filter asked for the usage chunk, and takes it out again.
func (x *Exchange) forwarding() bool { return x.split != nil && x.injected }

// observing says the answer's bytes are read for settlement.
func (x *Exchange) observing() bool {
	return x.held == holdOpen && (x.answer == answerStream || x.answer == answerBody)
}

// ResponseBody is a response body chunk of size bytes. The filter never
// holds the response back: a chunk is read as it passes, and only the
// usage chunk the filter asked for is taken out of a stream.
func (x *Exchange) ResponseBody(resp Response, size int, endOfStream bool) {
	forward, observe := x.forwarding(), x.observing()
	if !forward && x.held != holdOpen {
		return
	}
	if x.held == holdOpen {
		x.answerBytes += int64(size)
	}
	var chunk []byte
	if size > 0 && (observe || forward) {
		// Every chunk is read as it passes: a stream's and a body's by
		// their readers, which copy what they keep, and an answer whole in
		// its last chunk, whose usage is read before this callback ends.
		chunk, _ = resp.Chunk(size, x.split != nil || x.answer == answerBody)
	}
	switch {
	case forward:
		var h sse.Handler = forwardEvents{x}
		if observe {
			h = readEvents{x}
		}
		out := x.split.Forward(x.buffers().out[:0], chunk, endOfStream, h)
		if !sameBytes(out, chunk) {
			x.fx.SetResponseBody(size, out)
			// The adapter hands the bytes to the host, which copies them:
			// the buffer serves the next chunk that changes. It is never
			// a prefix of chunk, which may be the host's scratch buffer.
			if copied := len(out) > 0 && (len(chunk) == 0 || &out[0] != &chunk[0]); copied && cap(out) <= 64<<10 {
				x.buffers().out = out[:0]
			}
		}
	case observe && len(chunk) > 0:
		x.observe(chunk, endOfStream)
	}
	if endOfStream {
		x.finish()
	}
}

// sameBytes says out is chunk itself, as Forward returns an unchanged chunk.
func sameBytes(out, chunk []byte) bool {
	return len(out) == len(chunk) && (len(out) == 0 || &out[0] == &chunk[0])
}

// readEvents hands each event of a stream read for settlement to the usage
// reader, which also tells the usage-only chunk the filter asked for on the
// client's behalf: dropped when the stream is forwarded. (Each handler is
// one pointer, so passing it as an sse.Handler allocates nothing.)
type readEvents struct{ x *Exchange }

func (e readEvents) Event(name, data []byte) bool { return e.x.reader.Event(name, data) }

// forwardEvents drops the usage-only chunk from a stream no longer read
// (its hold ended, or its answer costs nothing).
type forwardEvents struct{ x *Exchange }

func (forwardEvents) Event(_, data []byte) bool { return sse.IsOpenAIUsageOnlyChunk(data) }

// observe reads one response chunk as it passes. A non-streamed answer
// whole in one chunk, the usual case, is kept as it is and read whole at
// its end (usage.FromJSON, the faster reader); one in more chunks is read
// by the body scan, which keeps only its usage object, so an answer of any
// size is read.
func (x *Exchange) observe(chunk []byte, last bool) {
	if x.answer == answerStream {
		x.split.Read(chunk, readEvents{x})
		return
	}
	if x.scan == nil {
		if last && x.body == nil {
			// The host's buffer, read before anything else reads into it.
			x.body = chunk
			return
		}
		k := x.buffers()
		if k.scan == nil {
			k.scan = &usage.Body{}
		}
		x.scan = k.scan
		x.scan.Reset(x.api)
	}
	x.scan.Write(chunk)
}

// ResponseTrailers ends the response: its hold settles.
func (x *Exchange) ResponseTrailers() {
	if x.held == holdOpen {
		x.finish()
	}
}

// hasPrefixFold is a case-insensitive strings.HasPrefix.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
