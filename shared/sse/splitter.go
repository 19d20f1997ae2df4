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

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// MaxLine bounds the bytes a Splitter holds for one unfinished line, and
// MaxEvent the data of one unfinished event. A line or event past its bound
// is dropped whole (never truncated into JSON that happens to parse), so a
// backend that never sends a newline costs at most this much memory.
const (
	MaxLine  = 1 << 20
	MaxEvent = 1 << 20
	// maxEventName keeps the event: field short; names past it match nothing.
	maxEventName = 64
)

// maxPending bounds the bytes Forward holds back while an event is
// incomplete; an event longer than this is passed through undecided (never
// dropped), so a hostile stream cannot make the filter buffer without limit.
const maxPending = 1 << 20

var unknownName = []byte("?")

// Handler receives each event a Splitter dispatches: name is the event:
// field (empty when absent), data the event's data: lines joined with LF.
// Both alias the splitter's buffers and are valid only during the call. The
// answer says whether Forward removes the event's bytes from the stream it
// forwards; Read ignores it.
type Handler interface {
	Event(name, data []byte) (drop bool)
}

// Splitter is the one server-sent-event framer of a response: it frames the
// bytes once and hands each event to a Handler, which reads it (usage) and
// decides whether it is forwarded (the injected usage chunk), so no second
// framer runs over the same chunk.
//
// It follows the SSE parsing rules: lines end in LF, CRLF or CR (a CRLF
// split across two writes is one terminator); a line starting with ':' is a
// comment; "field:value" drops one space after the colon; data lines of one
// event join with LF; a blank line dispatches the event; an event without a
// final blank line is never dispatched. Results are therefore the same for
// any split of the same bytes into writes.
//
// A Splitter is not safe for concurrent use; one response owns one.
type Splitter struct {
	line     []byte // the unfinished line carried across writes
	dropping bool   // discarding the rest of an oversize line
	skipLF   bool   // the last write ended in CR; a leading LF completes it

	name []byte // event: of the pending event
	data []byte // joined data: lines of the pending event
	// ref is the data of the pending event while it is one data: line of
	// the chunk being framed, read in place; it is copied to data before
	// frame returns or when a second data: line comes.
	ref      []byte
	hasData  bool
	poisoned bool // the pending event lost a line; dispatching it would lie
	lost     bool // an oversize event was dropped unread

	// Forwarding state, used by Forward only.
	fwd      bool
	held     []byte // bytes of the undecided event from earlier writes
	passthru bool   // the current event outgrew maxPending: forwarded as it comes
	lfOwner  owner  // who the LF completing a trailing CR belongs to
	out      []byte // what this write forwards, once it differs from a prefix of chunk
	copying  bool   // out holds the forwarded bytes (else chunk[:alias])
	alias    int    // while !copying: chunk[:alias] is forwarded
	start    int    // chunk[start:] is not decided yet
}

// owner says what a CR that ended the last write closed, for the LF that
// may complete it at the start of the next.
type owner uint8

const (
	ownerEvent   owner = iota // a line of the event still pending: the LF is part of it
	ownerKept                 // a blank line that dispatched a kept event
	ownerDropped              // a blank line that dispatched a dropped event
)

// Read frames the next bytes of the body, split anywhere, and hands every
// complete event to h.
func (s *Splitter) Read(chunk []byte, h Handler) {
	s.fwd = false
	s.frame(chunk, h)
}

// Forward frames chunk like Read and returns the bytes to forward now:
// every byte in order, less the events h asks to drop. Bytes of an event
// are held back only until its blank line arrives; at the end of the stream
// (eos) whatever is held back is forwarded. The result is chunk itself when
// nothing was held or dropped (the common chunk), else it is appended to
// dst.
func (s *Splitter) Forward(dst, chunk []byte, eos bool, h Handler) []byte {
	s.fwd = true
	s.out, s.copying, s.alias, s.start = dst, false, 0, 0
	if len(s.held) > 0 {
		s.copying = true // the held bytes go first: the result is not a prefix of chunk
	}
	s.frame(chunk, h)
	tail := chunk[s.start:]
	if eos || s.passthru || len(s.held)+len(tail) > maxPending {
		// The end, or an event past the bound: forwarded undecided.
		s.passthru = !eos
		s.flushHeld(chunk)
		s.emit(chunk, s.start, len(chunk))
	} else {
		s.held = append(s.held, tail...)
	}
	out := s.out
	if !s.copying {
		out = chunk[:s.alias]
	}
	s.out = nil
	return out
}

// emit forwards chunk[from:to].
func (s *Splitter) emit(chunk []byte, from, to int) {
	if from >= to {
		return
	}
	if !s.copying && from == s.alias {
		s.alias = to
		return
	}
	s.diverge(chunk)
	s.out = append(s.out, chunk[from:to]...)
}

// diverge starts building the forwarded bytes in out: they are no longer
// a prefix of chunk.
func (s *Splitter) diverge(chunk []byte) {
	if !s.copying {
		s.out = append(s.out, chunk[:s.alias]...)
		s.copying = true
	}
}

// flushHeld forwards the held bytes of the undecided event.
func (s *Splitter) flushHeld(chunk []byte) {
	if len(s.held) == 0 {
		return
	}
	s.diverge(chunk)
	s.out = append(s.out, s.held...)
	s.forgetHeld()
}

func (s *Splitter) forgetHeld() {
	s.held = s.held[:0]
	if cap(s.held) > 64<<10 {
		s.held = nil // a rare long event must not pin its buffer for the stream's life
	}
}

// decide settles the event that ended at chunk[end] (exclusive): an event
// passing through undecided, or one kept, is forwarded with what was held
// of it; a dropped one is not.
func (s *Splitter) decide(chunk []byte, end int, drop bool) {
	if drop && !s.passthru {
		s.forgetHeld()
		s.diverge(chunk)
	} else {
		s.passthru = false
		s.flushHeld(chunk)
		s.emit(chunk, s.start, end)
	}
	s.start = end
}

func (s *Splitter) frame(chunk []byte, h Handler) {
	if len(chunk) == 0 {
		return
	}
	off := 0
	if s.skipLF {
		s.skipLF = false
		if chunk[0] == '\n' {
			off = 1
			if s.fwd {
				switch s.lfOwner {
				case ownerKept:
					s.emit(chunk, 0, 1)
					s.start = 1
				case ownerDropped:
					s.start = 1
					s.diverge(chunk)
				}
			}
		}
	}
	for off < len(chunk) {
		i := lineEnd(chunk[off:])
		if i < 0 {
			s.carry(chunk[off:])
			break
		}
		i += off
		next := i + 1
		trailingCR := false
		if chunk[i] == '\r' {
			if next == len(chunk) {
				s.skipLF, trailingCR = true, true
			} else if chunk[next] == '\n' {
				next++
			}
		}
		if s.finishLine(chunk[off:i], h) {
			drop := s.dispatch(h)
			if s.fwd {
				s.decide(chunk, next, drop)
			}
			if trailingCR {
				s.lfOwner = ownerKept
				if drop {
					s.lfOwner = ownerDropped
				}
			}
		} else if trailingCR {
			s.lfOwner = ownerEvent
		}
		off = next
	}
	s.keepRef()
}

// lineEnd finds the first CR or LF, eight bytes per step: a stream is
// mostly long data lines, and in the VM a byte loop per line was a large
// part of a chunk's cost.
func lineEnd(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if m := hasZero(x^(lsb*'\n')) | hasZero(x^(lsb*'\r')); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '\n' || b[i] == '\r' {
			return i
		}
	}
	return -1
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZero flags the bytes of x that are 0; the lowest flag is exact, which
// is all lineEnd reads.
func hasZero(x uint64) uint64 { return (x - lsb) &^ x & msb }

// carry keeps an unfinished line for the next write, or starts dropping it
// once it outgrows MaxLine.
func (s *Splitter) carry(part []byte) {
	if s.dropping {
		return
	}
	if len(s.line)+len(part) > MaxLine {
		s.dropLine(part)
		s.dropping = true
		return
	}
	s.line = append(s.line, part...)
}

// dropLine discards the oversize line whose latest part is part. Unless the
// line is a comment (a keep-alive padding trick), the pending event lost a
// field and is dropped at dispatch.
func (s *Splitter) dropLine(part []byte) {
	first := part
	if len(s.line) > 0 {
		first = s.line
	}
	if len(first) > 0 && first[0] != ':' {
		s.poisoned = true
	}
	s.line = s.line[:0]
	if cap(s.line) > 4096 {
		s.line = nil // give a huge buffer back rather than hold it for the stream's life
	}
}

// finishLine completes the current line with its last part and applies it
// to the pending event; true means the line was blank: the event is due.
func (s *Splitter) finishLine(last []byte, h Handler) (blank bool) {
	if s.dropping {
		s.dropping = false
		return false
	}
	if len(s.line)+len(last) > MaxLine {
		s.dropLine(last)
		return false
	}
	line, inChunk := last, true
	if len(s.line) > 0 {
		s.line = append(s.line, last...)
		line, inChunk = s.line, false
	}
	blank = len(line) == 0
	if !blank {
		s.processLine(line, inChunk)
	}
	s.line = s.line[:0]
	if cap(s.line) > 64<<10 {
		s.line = nil // a rare long line must not pin its buffer for the stream's life
	}
	return blank
}

// processLine applies one complete, non-blank line to the pending event;
// inChunk says line is part of the chunk being framed (not carried over).
func (s *Splitter) processLine(line []byte, inChunk bool) {
	if line[0] == ':' {
		return
	}
	field, value := line, []byte(nil)
	if c := bytes.IndexByte(line, ':'); c >= 0 {
		field, value = line[:c], line[c+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if s.poisoned {
			return
		}
		extra := len(value)
		if s.hasData {
			extra++
		}
		if len(s.data)+len(s.ref)+extra > MaxEvent {
			s.poisoned = true
			s.data, s.ref = s.data[:0], nil
			return
		}
		if !s.hasData && inChunk {
			s.ref, s.hasData = value, true // the common event: one line, read in place
			return
		}
		s.keepRef()
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	case "event":
		if len(value) > maxEventName {
			value = unknownName // matches no event type
		}
		s.name = append(s.name[:0], value...)
	}
}

// dispatch hands the pending event to h and resets it. An event that lost
// a line is never handed over, so it is never dropped either.
func (s *Splitter) dispatch(h Handler) (drop bool) {
	if s.hasData && !s.poisoned && h != nil {
		data := s.data
		if s.ref != nil {
			data = s.ref
		}
		drop = h.Event(s.name, data)
	}
	s.ref = nil
	if s.poisoned {
		s.lost = true
	}
	s.name = s.name[:0]
	s.data = s.data[:0]
	if cap(s.data) > 64<<10 {
		s.data = nil // as for s.line
	}
	s.hasData = false
	s.poisoned = false
	return drop
}

// keepRef copies the in-place data of the pending event into its buffer,
// before the chunk it points into is gone or another line joins it.
func (s *Splitter) keepRef() {
	if s.ref != nil {
		s.data = append(s.data[:0], s.ref...)
		s.ref = nil
	}
}

// Lost reports that an event larger than the splitter's bounds was dropped
// unread (or is being dropped now). Its content, possibly the final usage
// or the event that ends the stream, is unknown, so a caller settling on
// the stream cannot treat it as free.
func (s *Splitter) Lost() bool { return s.lost || s.dropping }

// Buffered is the capacity of the line buffer: what an unfinished line
// costs in memory, bounded by MaxLine.
func (s *Splitter) Buffered() int { return cap(s.line) }
