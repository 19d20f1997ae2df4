package usage

import (
	"bytes"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// maxUsageObject bounds the copy Body keeps of the usage object. Backends
// write a few hundred bytes there (OpenAI's with every detail is under
// 400); an answer whose first usage object is larger is read as one whose
// usage could not be read (Unreadable), never as one without usage.
const maxUsageObject = 64 << 10

// maxUsageName is the longest raw top-level member name that can spell
// "usage": each of its five letters as a six-byte \u escape.
const maxUsageName = 5 * 6

// Body reads the usage of a non-streamed answer as its bytes pass, in
// chunks split anywhere, without holding the answer: it checks the JSON
// grammar byte by byte with bounded state (a bit per open container, at
// most jsonx.MaxDepth of them, and the partial token at a chunk's end) and
// keeps a copy of the first top-level "usage" member only, when it is an
// object, up to maxUsageObject. Usage then reads that copy with the same
// readers the streams use, so for an answer whose usage object fits the
// bound it reports exactly what FromJSON reports on the whole body, for any
// split (TestTheBodyScanReadsWhatFromJSONReadsAtEverySplit,
// FuzzTheBodyScanReadsWhatFromJSONReads): the body is one valid JSON value,
// an object nested at most jsonx.MaxDepth deep; its first member named
// "usage" (names compared decoded) is an object; and inside it the first
// member of each name the API's reader takes is the one read.
//
// A Body is reused: Reset readies it for the next answer, keeping its
// buffers. It is not safe for concurrent use.
type Body struct {
	api API
	n   int64 // bytes written
	st  scanState
	num numPhase
	// lit is the literal being read (true, false, null), litAt how much
	// of it has been read; hex counts the digits of a \u escape read.
	lit   string
	litAt int
	hex   int
	// key says the string being read is a member name.
	key   bool
	depth int
	// stack has bit n set when the container open at depth n+1 is an
	// object. Only the bits below depth are ever read, and each is written
	// when its container opens, so Reset leaves it as it is.
	stack [(jsonx.MaxDepth + 63) / 64]uint64

	// name is the raw name of the top-level member being read, while it
	// can still spell "usage" (long: it cannot).
	name []byte
	long bool
	// found: the first top-level "usage" member was met; atUsage: the
	// value about to start is its value.
	found, atUsage bool
	// capture is the copy of the usage object while capturing (from its
	// opening brace at capDepth) and once object says it closed; over
	// says it outgrew maxUsageObject.
	capture   []byte
	capturing bool
	capDepth  int
	object    bool
	over      bool
}

// scanState is where the scan stands in the grammar.
type scanState uint8

const (
	sValue      scanState = iota // a value must come (the top level, after a colon, after a comma in an array)
	sValueOrEnd                  // after '[': a value or ']'
	sKeyOrEnd                    // after '{': a name or '}'
	sKey                         // after a comma in an object: a name
	sColon                       // after a name: its colon
	sNext                        // after a value in a container: a comma or the container's close
	sString                      // inside a string
	sEscape                      // after a backslash in a string
	sHex                         // inside the four hex digits of a \u escape
	sNumber                      // inside a number (num says where)
	sLiteral                     // inside true, false or null
	sDone                        // the top-level value ended: only whitespace may follow
	sBad                         // not JSON: nothing more is read
)

// numPhase is where a number stands in JSON's number grammar,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
type numPhase uint8

const (
	nMinus numPhase = iota // after '-': a digit must come
	nZero                  // a leading 0: the integer part is over
	nInt                   // in the integer part's digits
	nDot                   // after '.': a digit must come
	nFrac                  // in the fraction's digits
	nE                     // after 'e': a sign or a digit
	nESign                 // after the exponent's sign: a digit
	nExp                   // in the exponent's digits
)

// complete says the number may end here.
func (p numPhase) complete() bool { return p == nZero || p == nInt || p == nFrac || p == nExp }

// step reads c as the number's next byte, or reports false when c does not
// continue it (the number then ends before c, if it may).
func (p *numPhase) step(c byte) bool {
	digit := '0' <= c && c <= '9'
	switch *p {
	case nMinus:
		switch {
		case c == '0':
			*p = nZero
		case digit:
			*p = nInt
		default:
			return false
		}
	case nZero, nInt:
		switch {
		case digit && *p == nInt:
		case c == '.':
			*p = nDot
		case c == 'e' || c == 'E':
			*p = nE
		default:
			return false
		}
	case nDot:
		if !digit {
			return false
		}
		*p = nFrac
	case nFrac:
		switch {
		case digit:
		case c == 'e' || c == 'E':
			*p = nE
		default:
			return false
		}
	case nE:
		switch {
		case c == '+' || c == '-':
			*p = nESign
		case digit:
			*p = nExp
		default:
			return false
		}
	case nESign, nExp:
		if !digit {
			return false
		}
		*p = nExp
	}
	return true
}

// Reset readies b to read an answer of api, keeping its buffers.
func (b *Body) Reset(api API) {
	name, capture := b.name[:0], b.capture[:0]
	b.api, b.n, b.st, b.num, b.lit, b.litAt, b.hex, b.key, b.depth = api, 0, sValue, 0, "", 0, 0, false, 0
	b.name, b.long, b.found, b.atUsage = name, false, false, false
	b.capture, b.capturing, b.capDepth, b.object, b.over = capture, false, 0, false, false
}

// Bytes is how many bytes were written since Reset.
func (b *Body) Bytes() int64 { return b.n }

// Write reads the next bytes of the answer. It keeps none of d.
func (b *Body) Write(d []byte) {
	b.n += int64(len(d))
	from := 0 // where this chunk's part of the usage object begins
	i := 0
	for i < len(d) && b.st != sBad {
		switch b.st {
		case sString:
			j := jsonx.PlainEnd(d, i)
			b.addName(d[i:j])
			if i = j; i == len(d) {
				continue
			}
			switch c := d[i]; {
			case c == '"':
				i++
				b.endString()
			case c == '\\':
				b.addName(d[i : i+1])
				i++
				b.st = sEscape
			default: // a control byte
				b.st = sBad
			}
		case sEscape:
			switch c := d[i]; c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				b.st = sString
			case 'u':
				b.st, b.hex = sHex, 0
			default:
				b.st = sBad
				continue
			}
			b.addName(d[i : i+1])
			i++
		case sHex:
			if !isHex(d[i]) {
				b.st = sBad
				continue
			}
			b.addName(d[i : i+1])
			i++
			if b.hex++; b.hex == 4 {
				b.st = sString
			}
		case sNumber:
			if b.num.step(d[i]) {
				i++
				continue
			}
			if !b.num.complete() {
				b.st = sBad
				continue
			}
			b.valueEnded() // d[i] is read again after the number
		case sLiteral:
			if d[i] != b.lit[b.litAt] {
				b.st = sBad
				continue
			}
			i++
			if b.litAt++; b.litAt == len(b.lit) {
				b.valueEnded()
			}
		default:
			c := d[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				i++
				continue
			}
			switch b.st {
			case sColon:
				if c != ':' {
					b.st = sBad
					continue
				}
				b.st = sValue
			case sKeyOrEnd, sKey:
				switch {
				case c == '"':
					b.st, b.key = sString, true
				case c == '}' && b.st == sKeyOrEnd:
					if b.close() {
						b.endCapture(d[from : i+1])
					}
				default:
					b.st = sBad
					continue
				}
			case sNext:
				object := b.inObject()
				switch {
				case c == ',' && object:
					b.st = sKey
				case c == ',':
					b.st = sValue
				case c == '}' && object, c == ']' && !object:
					if b.close() {
						b.endCapture(d[from : i+1])
					}
				default:
					b.st = sBad
					continue
				}
			case sValueOrEnd, sValue:
				if c == ']' && b.st == sValueOrEnd {
					if b.close() {
						b.endCapture(d[from : i+1])
					}
					break
				}
				if b.startValue(c) {
					from = i
				}
			default: // sDone: only whitespace may follow
				b.st = sBad
				continue
			}
			i++
		}
	}
	if b.capturing {
		b.keep(d[from:i])
	}
}

// startValue reads c, the first byte of a value, and reports whether it
// opens the usage object, which is then copied from c on.
func (b *Body) startValue(c byte) (usage bool) {
	atUsage := b.atUsage
	b.atUsage = false
	switch {
	case c == '{' || c == '[':
		if b.depth == jsonx.MaxDepth {
			b.st = sBad
			return false
		}
		if c == '{' {
			b.stack[b.depth>>6] |= 1 << (b.depth & 63)
			b.st = sKeyOrEnd
		} else {
			b.stack[b.depth>>6] &^= 1 << (b.depth & 63)
			b.st = sValueOrEnd
		}
		b.depth++
		if atUsage && c == '{' {
			b.capturing, b.capDepth = true, b.depth
			return true
		}
	case c == '"':
		b.st, b.key = sString, false
	case c == '-':
		b.st, b.num = sNumber, nMinus
	case c == '0':
		b.st, b.num = sNumber, nZero
	case '1' <= c && c <= '9':
		b.st, b.num = sNumber, nInt
	case c == 't':
		b.st, b.lit, b.litAt = sLiteral, "true", 1
	case c == 'f':
		b.st, b.lit, b.litAt = sLiteral, "false", 1
	case c == 'n':
		b.st, b.lit, b.litAt = sLiteral, "null", 1
	default:
		b.st = sBad
	}
	return false
}

// inObject says the innermost open container is an object.
func (b *Body) inObject() bool {
	top := b.depth - 1
	return b.stack[top>>6]&(1<<(top&63)) != 0
}

// close closes the innermost container, and reports that it was the usage
// object being copied.
func (b *Body) close() (usage bool) {
	usage = b.capturing && b.depth == b.capDepth
	b.depth--
	b.valueEnded()
	return usage
}

// valueEnded moves past a value that just ended.
func (b *Body) valueEnded() {
	if b.depth == 0 {
		b.st = sDone
	} else {
		b.st = sNext
	}
}

// endString moves past a string's closing quote: a name goes on to its
// colon (a top-level one is checked for "usage"), a value has ended.
func (b *Body) endString() {
	if !b.key {
		b.valueEnded()
		return
	}
	b.st, b.key = sColon, false
	if b.depth == 1 {
		if !b.found && !b.long && isUsage(b.name, bytes.IndexByte(b.name, '\\') >= 0) {
			b.found, b.atUsage = true, true
		}
		b.name, b.long = b.name[:0], false
	}
}

// addName keeps raw bytes of a top-level member name while it may still
// spell "usage".
func (b *Body) addName(raw []byte) {
	if !b.key || b.depth != 1 || b.long {
		return
	}
	if len(b.name)+len(raw) > maxUsageName {
		b.long = true
		return
	}
	b.name = append(b.name, raw...)
}

// keep copies part of the usage object, within maxUsageObject.
func (b *Body) keep(part []byte) {
	if b.over {
		return
	}
	if len(b.capture)+len(part) > maxUsageObject {
		b.over, b.capture = true, b.capture[:0]
		return
	}
	b.capture = append(b.capture, part...)
}

// endCapture copies the last part of the usage object, which just closed.
func (b *Body) endCapture(part []byte) {
	b.keep(part)
	b.capturing, b.object = false, !b.over
}

// complete says the bytes written so far are one whole JSON value (a
// top-level number ends only with the body).
func (b *Body) complete() bool {
	return b.st == sDone || b.st == sNumber && b.depth == 0 && b.num.complete()
}

// Usage is the usage the answer reported, read once the whole answer was
// written: false when it is not one valid JSON object, its first top-level
// usage member is not an object holding both an input and an output
// counter of the API's reader, or that object was larger than the scan
// keeps (then Unreadable also says so).
func (b *Body) Usage() (Usage, bool) {
	if !b.complete() || !b.object {
		return Usage{}, false
	}
	return objectUsage(b.api, jsonx.Parse(b.capture))
}

// objectUsage reads a usage object u with api's reader (the streams').
func objectUsage(api API, u jsonx.Value) (Usage, bool) {
	switch api {
	case OpenAIChat, OpenAICompletions:
		return openAIUsage(u)
	case OpenAIResponses:
		return responsesUsage(u)
	case AnthropicMessages:
		var a anthropicUsage
		a.merge(u)
		return a.usage()
	}
	return Usage{}, false
}

// Unreadable says the answer may carry a usage the scan could not read:
// the bytes written are not one whole valid JSON value (not JSON, or cut
// short), or the first usage object was larger than maxUsageObject. A whole
// valid answer without a usage object is not unreadable: it reported none.
func (b *Body) Unreadable() bool { return !b.complete() || b.over }

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
