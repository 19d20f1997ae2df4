// Package sse frames a server-sent-event stream as it passes, split at any
// byte boundary, once: a Splitter hands each event to one Handler that
// reads it and decides whether it is forwarded. The filter uses it to read
// a streamed answer's usage and to take back what its own request rewrite
// caused: when it added stream_options.include_usage for a client that did
// not ask, the backend's extra usage-only chunk is read for settlement and
// then dropped, so the client sees the stream it asked for.
//
// Compiled into the .wasm: no fmt, no os, no goroutines.
package sse

// Dropper forwards whole events and drops those Drop selects: a Splitter
// whose handler is one predicate, for a caller with nothing else to read.
type Dropper struct {
	// Drop is given the concatenated data: payloads of one event (without
	// the "data:" prefixes) and says whether to remove the whole event.
	Drop func(data []byte) bool

	s Splitter
}

// Write takes the next chunk and returns the bytes to forward now, in a
// new slice when they differ from chunk. At the end of the stream (eos)
// whatever is held back is forwarded.
func (d *Dropper) Write(chunk []byte, eos bool) []byte {
	return d.s.Forward(nil, chunk, eos, predicate(d.Drop))
}

// predicate is a Drop function as a Handler.
type predicate func(data []byte) bool

func (p predicate) Event(_, data []byte) bool { return p != nil && p(data) }
