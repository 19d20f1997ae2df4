package estimate

import (
	"encoding/binary"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// The fixed bytes of a text part as clients write most of them, as
// little-endian words: `{"text":"` before the text and `,"type":"text"}`
// after it (Anthropic's SDKs), or `{"type":"text","text":"` before it and
// `"}` after it. The fifteen bytes after a text and the twenty-three before
// one are compared as two or three overlapping words.
var (
	textFirst    = binary.LittleEndian.Uint64([]byte(`{"text":`))
	typeText     = binary.LittleEndian.Uint64([]byte(`,"type":`))
	typeTextTail = binary.LittleEndian.Uint64([]byte(`:"text"}`))
	typeFirst    = binary.LittleEndian.Uint64([]byte(`{"type":`))
	typeFirst2   = binary.LittleEndian.Uint64([]byte(`"text","`))
	typeFirst3   = binary.LittleEndian.Uint64([]byte(`"text":"`))
)

// partsAt charges an array of content parts at c (a message's content, the
// cursor at its '['), part by part as content charges them, and consumes
// it: a text part spelled as clients write it by its shape (plainPart),
// any other part as part charges its value.
func (w *walker) partsAt(c *jsonx.StrictCursor) {
	c.Enter(jsonx.Array)
	for c.Next() {
		if !w.plainPart(c) {
			w.part(w.value(c))
		}
	}
}

// plainPart charges and consumes the array item at c when it is a text part
// spelled `{"text":S,"type":"text"}` or `{"type":"text","text":S}`, S a
// string, with no whitespace; for any other item it reports false, consuming
// and charging nothing. part charges such a part its text, and so does
// plainPart, reading the text as plainMessage reads a message's: in the VM
// the walk of the part's members, two lookups and a decoding of the text
// cost several calls each.
func (w *walker) plainPart(c *jsonx.StrictCursor) bool {
	d := w.body
	at := c.Offset()
	if at+23 > len(d) {
		return false
	}
	var q int // the text's opening quote
	typeFirstShape := false
	switch load64(d, at) {
	case textFirst:
		q = at + 8
	case typeFirst:
		if load64(d, at+8) != typeFirst2 || load64(d, at+15) != typeFirst3 {
			return false
		}
		q, typeFirstShape = at+22, true
	default:
		return false
	}
	if d[q] != '"' {
		return false
	}
	if !w.textAt(q) {
		return false
	}
	end := w.txt.end
	size := 0 // the part's length, once its end is found
	switch {
	case typeFirstShape:
		if end < len(d) && d[end] == '}' {
			size = end + 1 - at
		}
	case end+15 <= len(d) && load64(d, end) == typeText && load64(d, end+7) == typeTextTail:
		size = end + 15 - at
	}
	if size == 0 {
		return false
	}
	w.chargeText()
	c.Took(size, 1) // false only where the walk is then invalid
	return true
}
