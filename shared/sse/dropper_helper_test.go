package sse

// Dropper forwards whole events and drops those Drop selects: the
// splitter with a predicate as its handler, as the tests drive it.
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
