package usage

import "github.com/tokenbudget/tokenbudget/shared/sse"

// maxLine and maxEvent are the splitter's bounds on one unfinished line and
// on the data of one event.
const (
	maxLine  = sse.MaxLine
	maxEvent = sse.MaxEvent
)

// Stream reads one server-sent-event response body incrementally, so the
// filter can settle a streamed completion against the backend's final usage,
// or against the input estimate plus the delta count when the backend
// reported none, and only when the stream reached its normal end.
//
// Write frames the body with an sse.Splitter (the SSE parsing rules are
// there); a caller that frames the stream itself, to forward it too, hands
// each event to Event instead. Results are the same for any split of the
// same bytes into writes.
//
// A Stream is not safe for concurrent use; a filter stream context owns one.
type Stream struct {
	api   API
	count func(text []byte) int64

	split sse.Splitter // used by Write only

	usage     Usage
	haveUsage bool
	anthropic anthropicUsage
	completed bool
	delta     int64
	// usageOnly is set by the last event: it was OpenAI's usage-only chunk.
	usageOnly bool
}

// NewStream starts reading a response stream of api. count estimates the
// tokens of one delta text (the filter passes the estimator); it must only
// read the slice during the call. A nil count counts nothing.
func NewStream(api API, count func(text []byte) int64) *Stream {
	return &Stream{api: api, count: count}
}

// Write feeds the next bytes of the body, split anywhere.
func (s *Stream) Write(chunk []byte) { s.split.Read(chunk, streamHandler{s}) }

// streamHandler hands the splitter's events to the reader, dropping none.
type streamHandler struct{ s *Stream }

func (h streamHandler) Event(name, data []byte) bool {
	h.s.Event(name, data)
	return false
}

// Event reads one dispatched event: name is the event: field (empty when
// absent), data the joined data: lines; both are only read during the
// call. usageOnly reports OpenAI's usage-only chunk (an object whose first
// choices member is an empty array and whose first usage member is an
// object), the one a caller that asked for include_usage on the client's
// behalf takes out of the stream; it is read in the same walk that counts.
func (s *Stream) Event(name, data []byte) (usageOnly bool) {
	s.usageOnly = false
	s.handle(name, data)
	return s.usageOnly
}

// LostEvents reports that an event larger than the reader's bound was
// dropped unread. Its content, possibly the final usage or the event that
// ends the stream (a Responses response.completed carries the whole
// response), is unknown, so the caller cannot treat the stream as free.
func (s *Stream) LostEvents() bool { return s.split.Lost() }

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
// reasoning, tool-call names and arguments), the fallback charge when
// a completed stream carried no usage block.
func (s *Stream) DeltaTokens() int64 { return s.delta }

// countText adds one delta text to the delta count.
func (s *Stream) countText(text []byte) {
	if len(text) == 0 || s.count == nil {
		return
	}
	s.delta = addCount(s.delta, s.count(text))
}
