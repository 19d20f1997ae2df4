package usage

import "bytes"

// maxLine bounds the bytes a Stream holds for one unfinished line, and
// maxEvent the data of one unfinished event. A line or event past its bound is
// dropped whole (never truncated into JSON that happens to parse), so a
// backend that never sends a newline costs at most this much memory.
const (
	maxLine  = 1 << 20
	maxEvent = 1 << 20
	// maxEventName keeps the event: field short; names past it match nothing.
	maxEventName = 64
)

var unknownName = []byte("?")

// Stream reads one server-sent-event response body incrementally, so the
// filter can settle a streamed completion against the backend's final usage,
// or against the input estimate plus the delta count when the backend
// reported none, and only when the stream reached its normal end.
//
// It follows the SSE parsing rules: lines end in LF, CRLF or CR (a CRLF split
// across two writes is one terminator); a line starting with ':' is a
// comment; "field:value" drops one space after the colon; data lines of one
// event join with LF; a blank line dispatches the event; an event without a
// final blank line is never dispatched. Results are therefore the same for
// any split of the same bytes into writes.
//
// A Stream is not safe for concurrent use; a filter stream context owns one.
type Stream struct {
	api   API
	count func(text []byte) int64

	line     []byte // the unfinished line carried across writes
	dropping bool   // discarding the rest of an oversize line
	skipLF   bool   // the last write ended in CR; a leading LF completes it

	name     []byte // event: of the pending event
	data     []byte // joined data: lines of the pending event
	hasData  bool
	poisoned bool // the pending event lost a line; dispatching it would lie

	usage     Usage
	haveUsage bool
	anthropic anthropicUsage
	completed bool
	delta     int64
	lost      bool // an oversize event was dropped unread
}

// NewStream starts reading a response stream of api. count estimates the
// tokens of one delta text (the filter passes the estimator); it must only
// read the slice during the call. A nil count counts nothing.
func NewStream(api API, count func(text []byte) int64) *Stream {
	return &Stream{api: api, count: count}
}

// Write feeds the next bytes of the body, split anywhere.
func (s *Stream) Write(chunk []byte) {
	if len(chunk) == 0 {
		return
	}
	if s.skipLF {
		s.skipLF = false
		if chunk[0] == '\n' {
			chunk = chunk[1:]
		}
	}
	for len(chunk) > 0 {
		i := lineEnd(chunk)
		if i < 0 {
			s.carry(chunk)
			return
		}
		rest := chunk[i+1:]
		if chunk[i] == '\r' {
			if len(rest) == 0 {
				s.skipLF = true
			} else if rest[0] == '\n' {
				rest = rest[1:]
			}
		}
		s.finishLine(chunk[:i])
		chunk = rest
	}
}

// lineEnd finds the first CR or LF.
func lineEnd(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	lim := b
	if n >= 0 {
		lim = b[:n]
	}
	if r := bytes.IndexByte(lim, '\r'); r >= 0 {
		return r
	}
	return n
}

// carry keeps an unfinished line for the next write, or starts dropping it
// once it outgrows maxLine.
func (s *Stream) carry(part []byte) {
	if s.dropping {
		return
	}
	if len(s.line)+len(part) > maxLine {
		s.dropLine(part)
		s.dropping = true
		return
	}
	s.line = append(s.line, part...)
}

// dropLine discards the oversize line whose latest part is part. Unless the
// line is a comment (a keep-alive padding trick), the pending event lost a
// field and is dropped at dispatch.
func (s *Stream) dropLine(part []byte) {
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

// finishLine completes the current line with its last part and processes it.
func (s *Stream) finishLine(last []byte) {
	if s.dropping {
		s.dropping = false
		return
	}
	if len(s.line)+len(last) > maxLine {
		s.dropLine(last)
		return
	}
	line := last
	if len(s.line) > 0 {
		s.line = append(s.line, last...)
		line = s.line
	}
	s.processLine(line)
	s.line = s.line[:0]
	if cap(s.line) > 64<<10 {
		s.line = nil // a rare long line must not pin its buffer for the stream's life
	}
}

// processLine applies one complete line to the pending event.
func (s *Stream) processLine(line []byte) {
	if len(line) == 0 {
		s.dispatch()
		return
	}
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
		if len(s.data)+extra > maxEvent {
			s.poisoned = true
			s.data = s.data[:0]
			return
		}
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

// dispatch hands the pending event to the API's reader and resets it.
func (s *Stream) dispatch() {
	if s.hasData && !s.poisoned {
		s.handle(s.name, s.data)
	}
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
}

// LostEvents reports that an event larger than the reader's bound was
// dropped unread. Its content, possibly the final usage or the event that
// ends the stream (a Responses response.completed carries the whole
// response), is unknown, so the caller cannot treat the stream as free.
func (s *Stream) LostEvents() bool { return s.lost || s.dropping }

// Usage is the final usage the backend reported so far; false until a usage
// block with both an input and an output counter arrived. For Anthropic it
// combines message_start with the cumulative counts of message_delta. Settle
// against it only once Completed is true.
func (s *Stream) Usage() (Usage, bool) {
	if s.api == AnthropicMessages {
		return s.anthropic.usage()
	}
	return s.usage, s.haveUsage
}

// Completed reports that the stream reached its normal end: "data: [DONE]"
// for chat and completions, response.completed or response.incomplete for the
// Responses API, message_stop for Anthropic. A stream cut before it, or ended
// by an error or response.failed event, stays false and must be released, not
// settled.
func (s *Stream) Completed() bool { return s.completed }

// DeltaTokens is the count of the content deltas seen so far (text, refusal,
// reasoning, tool-call names and arguments), the seed's fallback charge when
// a completed stream carried no usage block.
func (s *Stream) DeltaTokens() int64 { return s.delta }

// countText adds one delta text to the delta count.
func (s *Stream) countText(text []byte) {
	if len(text) == 0 || s.count == nil {
		return
	}
	s.delta = addCount(s.delta, s.count(text))
}
