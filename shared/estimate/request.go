package estimate

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// ErrNotJSON reports a body that is not one JSON object. Admission admits
// such a request unchanged: the route's own handler owns body validation.
var ErrNotJSON = errors.New("estimate: request body is not a JSON object")

// MaxInput caps the input estimate so sums across dimensions and periods
// cannot overflow int64, far above any body an Envoy buffer holds.
const MaxInput int64 = 1 << 32

// DuplicateFieldError reports a top-level member that decides metering or
// limits (see DecisiveMembers) named twice. Backends disagree on which copy
// they read (Python and Go keep the last, others the first), so the filter
// cannot know which model, ceiling or stream mode it is metering: the
// request is refused, never guessed. Names are compared decoded, so
// "m\u006fdel" repeats "model".
type DuplicateFieldError struct {
	Field string // the member's decoded name, one of DecisiveMembers
}

func (e DuplicateFieldError) Error() string {
	return "estimate: request member \"" + e.Field + "\" is repeated"
}

// DecisiveMembers are the top-level members that decide what a request is
// metered as or limited by: the model, every output ceiling, the number of
// choices, and the stream mode (with its usage option). A repeated one is a
// DuplicateFieldError.
var DecisiveMembers = [...]string{
	"model", CeilingFields[0], CeilingFields[1], CeilingFields[2], "n", "best_of", "stream", "stream_options",
}

// The indices of DecisiveMembers.
const (
	memberModel = iota
	memberMaxTokens
	memberMaxCompletionTokens
	memberMaxOutputTokens
	memberN
	memberBestOf
	memberStream
	memberStreamOptions
)

// decisive is the index of key (decoded) in DecisiveMembers, or -1, and
// whether key spells that member exactly (otherwise in another case).
func decisive(key []byte) (int, bool) {
	switch string(key) {
	case "model":
		return memberModel, true
	case "max_tokens":
		return memberMaxTokens, true
	case "max_completion_tokens":
		return memberMaxCompletionTokens, true
	case "max_output_tokens":
		return memberMaxOutputTokens, true
	case "n":
		return memberN, true
	case "best_of":
		return memberBestOf, true
	case "stream":
		return memberStream, true
	case "stream_options":
		return memberStreamOptions, true
	}
	return decisiveFold(key), false
}

// decisiveFold matches key against DecisiveMembers ignoring case, with
// Unicode simple folding ("MODEL", "Max_Tokens", "ſtream" with a long s):
// Go's encoding/json reads a member under any such spelling, so a backend
// built on it serves "MODEL" as the model. The filter reads it the same
// way, and a spelling beside the plain one is a repeat.
func decisiveFold(key []byte) int {
	if len(key) == 0 || len(key) > 3*len("max_completion_tokens") {
		return -1
	}
	k := string(key) // no copy: the conversion is only compared
	c := key[0]
	for i, m := range DecisiveMembers {
		// Every member is lower-case ASCII, and a rune folds to an ASCII
		// letter only from that letter in either case or from a longer
		// non-ASCII rune (ſ, the Kelvin sign): a key shorter than m, or
		// whose first byte is ASCII and not m's first letter in either
		// case, cannot match it. Most keys (temperature, user, tools)
		// are thus told apart without a call, which in the VM costs
		// hundreds of instructions each.
		if len(key) < len(m) || c < utf8.RuneSelf && c|0x20 != m[0] {
			continue
		}
		if strings.EqualFold(k, m) {
			return i
		}
	}
	return -1
}

// Request is what admission needs from a request body.
type Request struct {
	Input              int64  // estimated input tokens; an over-count by construction
	Output             int64  // output ceiling per choice: the largest stated, else the default
	OutputStated       bool   // a positive ceiling was stated in the body (0 and below are none)
	Choices            int64  // completions generated when above 1: the largest of n and best_of
	Model              string // top-level "model" when a string
	Stream             bool   // top-level "stream" is true
	StreamIncludeUsage bool   // stream_options.include_usage is true
	// Images is the number of image parts in the prompt (OpenAI image_url,
	// Responses input_image, Anthropic image, tool results included),
	// counted in the same pass, for a model's max_images_per_request.
	Images int64
}

// Hold is what the request reserves: its input estimate plus the output
// ceiling of every choice it asks for, saturating at MaxInput+MaxOutput (a
// request that large is refused by any budget, never under-reserved).
func (r Request) Hold() int64 {
	return r.Input + min(r.Output*max(r.Choices, 1), MaxOutput)
}

// Parse reads what admission reserves from one request body of any of the
// estimated routes (chat completions, completions, Responses, Anthropic
// messages) in one pass over the top-level object. The reservation is the
// input estimate plus Output with no further margin, so Input walks every
// field the backend renders into the prompt; see walk.go. defaultOutput is
// the ceiling when the body states none (no ceiling field, or only ones
// that hold no positive number); it is clamped to [0, MaxOutput]. Distinct
// ceiling fields may each be stated: Output is the largest.
//
// The body is validated in the same pass, exactly as jsonx.Parse validates
// it (so a body nested deeper than jsonx.MaxDepth is ErrNotJSON), and is
// only read, never kept: Model is a copy. A repeated decisive member of a
// valid body is a DuplicateFieldError; members nested below the top level
// are not compared.
//
// Input is estimated for the model's encoding (EncodingOf): o200k_base's
// alone for the models known to use it, else one never below cl100k_base
// nor o200k_base.
func Parse(body []byte, defaultOutput int64) (Request, error) {
	// ParseInto, not ParseMembers: in the VM each struct returned by value
	// is a copy, and Parse's caller has no use for the Members.
	var p Parser
	var r Request
	var m Members
	err := p.ParseInto(&r, &m, body, defaultOutput)
	return r, err
}

// Span is where a member's value sits in a body: body[Start:End].
type Span struct{ Start, End int }

// Members locates, in the body ParseMembers read, what a rewrite of the
// body edits, so that editing does not parse it again.
type Members struct {
	// Append is where a new member goes: right after the last member's
	// value, or right after '{' when the object has no member.
	Append int
	// Empty says the object has no member.
	Empty bool

	spans [len(DecisiveMembers)]Span
	exact uint8 // bit i: spans[i] holds DecisiveMembers[i]
}

// Exact is the value of decisive member name (one of DecisiveMembers)
// when the body names it exactly so (after decoding escapes), as a reader
// matching names exactly (jsonx.Get, most JSON libraries) finds it; false
// when it is absent, or only spelled in another case.
func (m *Members) Exact(name string) (Span, bool) {
	for i, d := range DecisiveMembers {
		if d == name {
			return m.spans[i], m.exact&(1<<i) != 0
		}
	}
	return Span{}, false
}

// ParseMembers is Parse, also locating the members a rewrite edits.
func ParseMembers(body []byte, defaultOutput int64) (Request, Members, error) {
	var p Parser
	var r Request
	var m Members
	err := p.ParseInto(&r, &m, body, defaultOutput)
	return r, m, err
}

// Parser is ParseMembers with storage kept from parse to parse: the
// buffers strings holding escapes are decoded into, and the results
// written where the caller keeps them (in the VM a struct returned by
// value is a memory.copy, a call into the host). The zero Parser is ready.
type Parser struct {
	buf, kbuf []byte
}

// ParseInto is ParseMembers into *r and *m (both zero on an error).
func (p *Parser) ParseInto(r *Request, m *Members, body []byte, defaultOutput int64) error {
	input, err := p.parseCounts(r, m, body, defaultOutput)
	if err == nil && EncodingOf(r.Model) == O200k {
		r.Input = input.o200k
	}
	return err
}

// parseCounts is ParseMembers with both input estimates; Input is the one
// that fits every encoding.
func parseCounts(body []byte, defaultOutput int64) (Request, Members, counts, error) {
	var p Parser
	var r Request
	var m Members
	c, err := p.parseCounts(&r, &m, body, defaultOutput)
	return r, m, c, err
}

func (p *Parser) parseCounts(r *Request, m *Members, body []byte, defaultOutput int64) (counts, error) {
	*r, *m = Request{}, Members{}
	// The body is validated as it is walked (a jsonx.StrictCursor), so
	// each string is read once for the grammar and once for its text, and
	// the messages array is walked as it is read instead of skipped first.
	c := jsonx.Strict(body)
	if c.Kind() != jsonx.Object {
		return counts{}, ErrNotJSON
	}
	c.Enter(jsonx.Object)
	m.Empty, m.Append = true, c.Offset()
	w := walker{body: body, buf: p.buf, kbuf: p.kbuf}
	var seen uint8 // bit i: DecisiveMembers[i] was read
	var dup error  // the first repeated decisive member, reported once the body is known valid
	choices := int64(0)
	w.add(requestBase)
	for {
		key, ok := c.NextMember()
		if !ok {
			break
		}
		if c.Escaped() {
			// Most names hold no escape, and the validator knows it.
			key = w.key(key)
		}
		m.Empty = false
		if string(key) == "messages" && c.Kind() == jsonx.Array {
			w.messagesAt(&c)
			m.Append = c.Offset()
			continue
		}
		// The decisive member key spells, whatever its case; members are
		// told apart by index, not by name: in the VM each comparison of
		// names is a call.
		i, exact := decisive(key)
		if i >= 0 {
			if seen&(1<<i) != 0 && dup == nil {
				dup = DuplicateFieldError{Field: DecisiveMembers[i]}
			}
			seen |= 1 << i
		}
		v := w.value(&c)
		m.Append = c.Offset()
		if exact {
			m.spans[i] = Span{Start: m.Append - len(v.Raw), End: m.Append}
			m.exact |= 1 << i
		}
		switch i {
		case memberModel:
			if v.Kind == jsonx.String {
				r.Model = v.Str() // a copy: the body may be rewritten later
			}
		case memberStream:
			r.Stream = v.Kind == jsonx.True
		case memberStreamOptions:
			r.StreamIncludeUsage = v.Get("include_usage").Kind == jsonx.True
		case memberMaxTokens, memberMaxCompletionTokens, memberMaxOutputTokens:
			if n, ok := StatedCeiling(v); ok {
				if !r.OutputStated || n > r.Output {
					r.Output = n
				}
				r.OutputStated = true
			}
		case memberN, memberBestOf:
			// The ceiling is per choice: n (and legacy best_of, which
			// generates that many server-side) multiply what one request
			// may generate.
			if c, ok := OutputCeiling(v); ok && c > choices {
				choices = c
			}
			w.field(key, v) // charged as input as before: a token at most
		default:
			w.field(key, v)
		}
	}
	p.buf, p.kbuf = w.buf, w.kbuf // kept, grown, for the next parse
	switch {
	case !c.Valid():
		*r, *m = Request{}, Members{}
		return counts{}, ErrNotJSON
	case dup != nil:
		*r, *m = Request{}, Members{}
		return counts{}, dup
	}
	if !r.OutputStated {
		r.Output = min(max(defaultOutput, 0), MaxOutput)
	}
	if choices > 1 {
		r.Choices = min(choices, MaxOutput)
	}
	r.Input, r.Images = w.total, w.images
	return counts{w.total, w.o200k}, nil
}
