package estimate

import (
	"encoding/binary"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// The fixed bytes of a message as clients write most of them, a role and a
// string content in either order with no whitespace, as little-endian
// words: `{"role":` and `,"role":` are eight bytes, `{"content":"` and
// `,"content":"` twelve, compared as eight and then the four after them.
var (
	roleFirst     = binary.LittleEndian.Uint64([]byte(`{"role":`))
	roleNext      = binary.LittleEndian.Uint64([]byte(`,"role":`))
	contentFirst  = binary.LittleEndian.Uint64([]byte(`{"conten`))
	contentNext   = binary.LittleEndian.Uint64([]byte(`,"conten`))
	contentFirst3 = uint64(binary.LittleEndian.Uint32([]byte(`t":"`)))
)

// plainMessage charges and consumes the array item at c when it is a
// message spelled `{"role":R,"content":S}` or `{"content":S,"role":R}`, R one
// of roles and S a string, with no whitespace: what the OpenAI Go SDK sends
// (content first), and compact serializers of a caller's message (role
// first, usually). For any other item it reports false, consuming and
// charging nothing, and the walk reads the item member by member
// (messageAt), charging it the same.
//
// On messageAt's path a message costs the VM about 7,600 instructions, most
// of them in the cursor's calls and their checks of its state, against
// about 120 for a word of prose. Here the fixed bytes are compared in line,
// the role found in its table (roleAt), the text read once as rawText reads
// it, and the whole message handed to the cursor as one value it need not
// check again (Took): every byte of it has been checked here, the string by
// the validator's own reader.
func (w *walker) plainMessage(c *jsonx.StrictCursor) bool {
	d := w.body
	at := c.Offset()
	if at+16 > len(d) {
		return false
	}
	var r *roleLit
	var q int // the content's opening quote
	switch load64(d, at) {
	case roleFirst:
		if r = roleAt(d, at+8); r == nil {
			return false
		}
		q = at + 8 + r.size + 11
		if q >= len(d) || load64(d, q-11) != contentNext || uint64(load32(d, q-3)) != contentFirst3 {
			return false
		}
	case contentFirst:
		if uint64(load32(d, at+8)) != contentFirst3 {
			return false
		}
		q = at + 11
	default:
		return false
	}
	if !w.textAt(q) {
		return false
	}
	end := w.txt.end
	size := 0 // the message's length, once its end is found
	if r == nil {
		// `,"role":` and the role after the content, then the brace.
		if end+8 <= len(d) && load64(d, end) == roleNext {
			if r = roleAt(d, end+8); r != nil {
				size = end + 8 + r.size + 1 - at
			}
		}
	} else {
		size = end + 1 - at
	}
	if size == 0 || at+size > len(d) || d[at+size-1] != '}' {
		return false
	}
	w.add(messageFloor)
	w.addText(r.cost)
	w.chargeText()
	c.Took(size, 1) // false only where the walk is then invalid
	return true
}

// load32 reads s[i:i+4] little-endian (bounds-checked: plainMessage's
// tests of the room left are what keep it from panicking).
func load32(s []byte, i int) uint32 { return binary.LittleEndian.Uint32(s[i:]) }
