package estimate

import (
	"bytes"
	"encoding/binary"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// Fixed charges besides text. OpenAI documents 3 tokens of framing per chat
// message plus the role, and 3 for priming the reply; the estimator charges
// messageFloor per message (framing and a one-token role) and requestBase
// per request.
const (
	messageFloor = 4
	requestBase  = 3
	// nameCost is the extra token OpenAI charges for a message "name".
	nameCost = 1
	// Images are charged a fixed cost without decoding them: 85 tokens at
	// "low" detail (OpenAI's fixed low-detail cost) and otherwise 1600,
	// the most Anthropic charges for one image (about 1.15 megapixels at
	// 750 pixels per token) and more than OpenAI's 765 for a typical
	// high-detail image. Reconciliation settles the real figure.
	imageLowCost  = 85
	imageHighCost = 1600
)

// walker sums the estimate, saturating at MaxInput. Strings are measured
// in place; only those holding escapes are decoded, into scratch buffers
// the walk reuses, so a large body costs a handful of allocations.
type walker struct {
	total  int64      // the estimate for every encoding: the larger count of each piece
	o200k  int64      // the estimate for o200k_base alone (see Encoding)
	images int64      // image parts seen
	buf    []byte     // decoded string values
	kbuf   []byte     // decoded member names
	plain  []byte     // the Raw of the last String the strict walk read, when it holds no escape
	body   []byte     // the document the strict walk reads, for rawText
	txt    stringText // the string textAt read last
}

// add charges n tokens whatever the encoding (framing, images, roles).
func (w *walker) add(n int64) { w.addText(counts{n, n}) }

// addText charges a text's counts, each saturating at MaxInput.
func (w *walker) addText(c counts) {
	w.total = saturatingAdd(w.total, c.any)
	w.o200k = saturatingAdd(w.o200k, c.o200k)
}

func saturatingAdd(total, n int64) int64 {
	if n <= 0 {
		return total
	}
	if n >= MaxInput-total {
		return MaxInput
	}
	return total + n
}

// str returns the decoded text of a String value. It aliases the body or
// w.buf, so it is valid only until the next call.
func (w *walker) str(v jsonx.Value) []byte {
	c := v.Content()
	if len(c) > 0 && len(v.Raw) == len(w.plain) && &v.Raw[0] == &w.plain[0] {
		return c // known to hold no escape: not searched again
	}
	i := bytes.IndexByte(c, '\\')
	if i < 0 {
		return c
	}
	// Invalid UTF-8 is kept: it costs a token per byte, escaped or not.
	w.buf = jsonx.AppendUnescaped(append(grow(w.buf, len(c)), c[:i]...), c[i:], jsonx.KeepInvalidUTF8)
	return w.buf
}

// grow empties buf and makes room for n bytes (a string's content never
// decodes to more bytes than it holds), at least doubling so a walk over
// growing strings allocates a few times at most.
func grow(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, 0, max(n, 2*cap(buf)))
	}
	return buf[:0]
}

// key returns a member name from ForEach decoded, aliasing the body or
// w.kbuf; valid only until the next call.
func (w *walker) key(raw []byte) []byte {
	i := bytes.IndexByte(raw, '\\')
	if i < 0 {
		return raw
	}
	w.kbuf = jsonx.AppendUnescaped(append(grow(w.kbuf, len(raw)), raw[:i]...), raw[i:], jsonx.KeepInvalidUTF8)
	return w.kbuf
}

// strIs reports a String value whose decoded text is s.
func (w *walker) strIs(v jsonx.Value, s string) bool {
	return v.Kind == jsonx.String && string(w.str(v)) == s
}

func (w *walker) text(s []byte) { w.addText(textCounts(s)) }

// raw charges a value by its JSON text: the safe charge for any shape the
// walk does not model, since backends render such values into the prompt.
func (w *walker) raw(v jsonx.Value) { w.addText(textCounts(v.Raw)) }

// field charges one top-level field. Fields that are not prompt input
// (sampling parameters, metadata, ...) cost nothing.
func (w *walker) field(key []byte, v jsonx.Value) {
	switch string(key) {
	case "messages":
		w.messages(v)
	case "tools", "functions", "response_format":
		w.raw(v)
	case "text":
		// Responses' structured-output schema lives in text.format.
		if v.Kind == jsonx.Object {
			w.raw(v)
		}
	case "prompt":
		w.prompt(v)
	case "input":
		w.input(v)
	case "instructions":
		w.add(messageFloor)
		w.stringOrRaw(v)
	case "system":
		w.add(messageFloor)
		w.content(v)
	}
}

// textCost is what stringOrRaw charges for v.
func (w *walker) textCost(v jsonx.Value) counts {
	switch v.Kind {
	case jsonx.String:
		return textCounts(w.str(v))
	case jsonx.Null:
		return counts{}
	}
	return textCounts(v.Raw)
}

func (w *walker) stringOrRaw(v jsonx.Value) { w.addText(w.textCost(v)) }

func (w *walker) messages(v jsonx.Value) {
	if v.Kind != jsonx.Array {
		w.raw(v)
		return
	}
	v.ForEach(func(_ []byte, m jsonx.Value) bool {
		w.message(m)
		return true
	})
}

// message charges one chat or Responses message: the floor, then every
// field, because backends render tool calls, names and provider extras
// into the prompt too.
func (w *walker) message(m jsonx.Value) {
	w.add(messageFloor)
	if m.Kind != jsonx.Object {
		w.raw(m)
		return
	}
	m.ForEach(func(rawKey []byte, f jsonx.Value) bool {
		w.member(w.key(rawKey), f)
		return true
	})
}

// messagesAt is messages for the array at c, read in one pass: ForEach
// would find the end of every message before handing it over, and the walk
// of each message's fields would read its bytes again. It consumes the array.
func (w *walker) messagesAt(c *jsonx.StrictCursor) {
	c.Enter(jsonx.Array)
	for c.Next() {
		switch {
		case w.plainMessage(c):
		case c.EnterObject():
			w.messageAt(c)
		default:
			w.message(c.Value())
		}
	}
}

// messageAt is message for the object c has just entered; it consumes the
// object. Its members are read with NextMember, one call of the cursor each
// where Next, Key and Kind were three.
func (w *walker) messageAt(c *jsonx.StrictCursor) {
	w.add(messageFloor)
	for {
		k, ok := c.NextMember()
		if !ok {
			break
		}
		if c.Escaped() {
			// Most names hold no escape, and the validator knows it.
			k = w.key(k)
		}
		if string(k) == "content" {
			// What member charges for a string content, read once, or
			// for an array of parts, read as it is validated.
			if w.atString(c) {
				w.rawText(c)
				continue
			}
			if w.atByte(c, '[') {
				w.partsAt(c)
				continue
			}
		}
		if string(k) == "role" && w.atString(c) && w.knownRole(c) {
			continue
		}
		w.member(k, w.value(c))
	}
}

// atString is c.Kind() == jsonx.String without the call, for a cursor that
// NextMember has just given a name: it stands at the value's first byte, and
// on an error NextMember gives no name, so no caller asks.
func (w *walker) atString(c *jsonx.StrictCursor) bool { return w.atByte(c, '"') }

// atByte reports the value's first byte b, as atString.
func (w *walker) atByte(c *jsonx.StrictCursor, b byte) bool {
	i := c.Offset()
	return i < len(w.body) && w.body[i] == b
}

// roleLit is a role value every chat message may carry: its JSON text
// (quotes included, at most 16 bytes) as two little-endian words and the
// bytes of each it fills, and what member charges for it.
type roleLit struct {
	lo, hi, mlo, mhi uint64
	size             int
	cost             counts
}

// roles are the common role values, found by the letter after the quote
// (roleOf; 0 is none): a message's role then costs a comparison and the
// validator's look at the closing quote instead of member's text scan.
var roles, roleOf = func() (t [6]roleLit, of [256]uint8) {
	for i, r := range [...]string{"user", "assistant", "system", "tool", "developer"} {
		var b [16]byte
		q := `"` + r + `"`
		copy(b[:], q)
		l := &t[i+1]
		l.lo, l.hi = binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
		l.mlo, l.mhi = mask(len(q)), mask(len(q)-8)
		l.size = len(q)
		c := textCounts([]byte(r))
		l.cost = counts{c.any - 1, c.o200k - 1} // as member charges a role
		of[r[0]] = uint8(i + 1)
	}
	return t, of
}()

// mask has the low n bytes of a word set (all for n >= 8, none for n <= 0).
func mask(n int) uint64 {
	switch {
	case n >= 8:
		return ^uint64(0)
	case n <= 0:
		return 0
	}
	return 1<<(8*n) - 1
}

// knownRole consumes and charges the string value at c, as member charges
// a role, when it is one of roles, and reports whether it was.
func (w *walker) knownRole(c *jsonx.StrictCursor) bool {
	start := c.Offset() // atString found the opening quote here
	r := roleAt(w.body, start)
	if r == nil {
		return false
	}
	// Letters up to the closing quote: the validator checks from there.
	if c.StringAfter(start+r.size-1).Kind == jsonx.String {
		w.addText(r.cost)
	}
	return true
}

// roleAt is the role of roles whose JSON text, quotes included, starts at
// d[start], or nil; it compares 16 bytes, so none is found nearer the end.
func roleAt(d []byte, start int) *roleLit {
	if start < 0 || start+16 > len(d) {
		return nil
	}
	lo, hi := load64(d, start), load64(d, start+8)
	r := &roles[roleOf[byte(lo>>8)]]
	if r.size == 0 || lo&r.mlo != r.lo || hi&r.mhi != r.hi {
		return nil
	}
	return r
}

// rawText consumes the string value at c and charges its text, as
// stringOrRaw does, reading the text's plain start once for the grammar and
// the estimate: words runs over the string's JSON text in the body, and since
// it passes only letters, digits, spaces and punctuation a JSON string holds
// as it is (see wordPunct), it stops at the closing quote at the latest, and
// everything it passed is valid string content, the same bytes as the
// decoded text's start. The validator checks the string from there, and scan
// carries on from words' position and charge. A string holding an escape is
// decoded and charged whole instead: words' charge is dropped, since an
// escape may decode to a letter that joins the word before it ("ab\u0063d"),
// so where words stopped is not where the decoded text's scan stands (its
// plain start, read twice, is short in the code that JSON escapes).
func (w *walker) rawText(c *jsonx.StrictCursor) {
	start := c.Offset() // atString found the opening quote here
	if !w.textAt(start) {
		c.StringAfter(w.txt.i) // the walk is invalid there: nothing is charged
		return
	}
	c.Took(w.txt.end-start, 0)
	w.chargeText()
}

// plainStart runs words over the start of the string whose opening quote is
// at body[start] and returns where it stopped (right after the quote when
// the text does not start with a letter) and its charge; see rawText.
func (w *walker) plainStart(start int) (int, int64) {
	d := w.body
	i := start + 1
	if i < len(d) && byteClass[d[i]] <= clsUpper {
		return words(d, i, 0)
	}
	return i, 0
}

// maxReserve bounds the room textAt makes for a decoded text before it
// knows its length.
const maxReserve = 4 << 10

// stringText is a string textAt has read for chargeText (walker.txt: in
// the VM a struct returned is a copy through memory).
type stringText struct {
	start   int   // its opening quote
	i       int   // where words stopped
	u       int64 // what words charged
	end     int   // the index after its closing quote
	decoded bool  // it holds an escape, and w.buf its decoded text
}

// textAt reads the string whose opening quote is at body[start] for its
// charge into w.txt, as rawText describes: words over its plain start
// (plainStart), then the validator from there; false where it is not a
// valid string (w.txt.i is then where words stopped). A text with an
// escape is decoded into w.buf from its first escape as it is validated
// (jsonx.AppendStringRest), one pass where validating it and then decoding
// it to charge it were two: in code and formatted text an escape comes
// within a line.
func (w *walker) textAt(start int) bool {
	t := &w.txt
	t.start, t.decoded = start, false
	t.i, t.u = w.plainStart(start)
	d := w.body
	j := jsonx.PlainEnd(d, t.i)
	switch {
	case j >= len(d):
		return false
	case d[j] == '"':
		t.end = j + 1
		return true
	case d[j] != '\\':
		return false // a control byte
	}
	// Room for the rest of the body, up to maxReserve: one allocation for
	// a walk's strings, and a longer one grows as append grows.
	buf := append(grow(w.buf, min(len(d)-start, maxReserve)), d[start+1:j]...)
	var ok bool
	w.buf, t.end, ok = jsonx.AppendStringRest(buf, d, j)
	t.decoded = true
	return ok
}

// chargeText charges a valid string textAt read: the text from where words
// stopped on, or, when it holds an escape, the whole text decoded.
func (w *walker) chargeText() {
	t := &w.txt
	if t.decoded {
		w.addText(textCounts(w.buf))
		return
	}
	w.addText(scan(w.body[t.start+1:t.end-1], t.i-t.start-1, t.u))
}

// value consumes the value at c, noting a string without escapes for str.
func (w *walker) value(c *jsonx.StrictCursor) jsonx.Value {
	v := c.Value()
	if !c.Escaped() {
		w.plain = v.Raw
	}
	return v
}

// member charges one field k (decoded) of a message.
func (w *walker) member(k []byte, f jsonx.Value) {
	switch string(k) {
	case "role":
		// The floor covers a one-token role.
		c := w.textCost(f)
		w.addText(counts{c.any - 1, c.o200k - 1})
	case "content":
		w.content(f)
	case "name":
		w.add(nameCost)
		w.stringOrRaw(f)
	case "type":
		// "message" in Responses items: framing, covered by the floor.
	case "tool_call_id", "tool_calls", "function_call":
		w.stringOrRaw(f)
	default:
		if f.Kind != jsonx.Null {
			w.text(k)
			w.stringOrRaw(f)
		}
	}
}

// content charges message content: a string, or an array of parts.
func (w *walker) content(v jsonx.Value) {
	if v.Kind != jsonx.Array {
		w.stringOrRaw(v)
		return
	}
	v.ForEach(func(_ []byte, p jsonx.Value) bool {
		w.part(p)
		return true
	})
}

// part charges one content part or block (OpenAI and Anthropic spellings):
// the text of text parts, a fixed cost for images, the nested content of
// tool results, and the JSON text of anything else.
func (w *walker) part(p jsonx.Value) {
	if p.Kind != jsonx.Object {
		w.stringOrRaw(p)
		return
	}
	var typ []byte
	if t := p.Get("type"); t.Kind == jsonx.String {
		typ = w.str(t)
	}
	switch string(typ) {
	case "text", "input_text", "output_text":
		w.stringOrRaw(p.Get("text"))
	case "image_url", "input_image", "image":
		w.images++
		if w.strIs(p.Get("detail"), "low") || w.strIs(p.Path("image_url", "detail"), "low") {
			w.add(imageLowCost)
		} else {
			w.add(imageHighCost)
		}
	case "tool_result":
		w.stringOrRaw(p.Get("tool_use_id"))
		w.content(p.Get("content"))
	default:
		w.raw(p)
	}
}

// prompt charges the completions prompt: a string, an array of strings, or
// token ids (one token each).
func (w *walker) prompt(v jsonx.Value) {
	if v.Kind != jsonx.Array {
		w.stringOrRaw(v)
		return
	}
	v.ForEach(func(_ []byte, e jsonx.Value) bool {
		switch e.Kind {
		case jsonx.Number:
			w.add(1)
		case jsonx.Array:
			w.prompt(e)
		default:
			w.stringOrRaw(e)
		}
		return true
	})
}

// input charges the Responses (and embeddings) input: a string, token ids,
// or items, where message-like items are charged as messages and other
// items (function calls, their outputs, reasoning) by their JSON text.
func (w *walker) input(v jsonx.Value) {
	if v.Kind != jsonx.Array {
		w.stringOrRaw(v)
		return
	}
	v.ForEach(func(_ []byte, e jsonx.Value) bool {
		switch {
		case e.Kind == jsonx.Number:
			w.add(1)
		case e.Kind == jsonx.Array:
			w.input(e)
		case e.Kind == jsonx.Object && (e.Get("role").Exists() || e.Get("content").Exists()):
			w.message(e)
		default:
			w.stringOrRaw(e)
		}
		return true
	})
}
