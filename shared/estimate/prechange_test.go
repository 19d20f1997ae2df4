package estimate

// This file is the estimator exactly as it stood before it was tuned for the
// wasm VM (commit in the message of the change that added it): Text, its
// charges and the request walk, renamed with a "pre" prefix. The tuned code
// must charge bit-for-bit what this charges; prechange_diff_test.go and the
// fuzz targets hold it to that. Edit this file only to follow a deliberate,
// announced change of the estimate.

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// Costs are summed in fixed point so fractional per-run charges add up over
// a fragment before the single round-up at the end.
const preUnit = 64

// Byte classes for the single pass in Text.
const (
	preClsPunct uint8 = iota
	preClsLower
	preClsUpper
	preClsDigit
	preClsSpace
	preClsHigh // first or continuation byte of a multi-byte UTF-8 sequence
)

var preByteClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch {
		case c >= 'a' && c <= 'z':
			t[c] = preClsLower
		case c >= 'A' && c <= 'Z':
			t[c] = preClsUpper
		case c >= '0' && c <= '9':
			t[c] = preClsDigit
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			t[c] = preClsSpace
		case c >= 0x80:
			t[c] = preClsHigh
		default:
			t[c] = preClsPunct
		}
	}
	return t
}()

// Text estimates the tokens of one text fragment. It is the estimator's only
// source of counts, for prompt text and for streamed deltas alike.
//
// It mimics the pre-tokenizers of cl100k_base and o200k_base, whose pieces a
// BPE never merges across, and charges each piece conservatively:
//   - an ASCII word is split where o200k splits it (before an upper-case
//     letter that follows a lower-case one, and at digits); a piece costs one
//     token plus a share per letter beyond what common words reach, more for
//     pieces that look random (short mixed-case pieces, all capitals);
//   - digits cost one token per group of three, plus one for a single space
//     before them (neither tokenizer joins a space to a number);
//   - punctuation costs one token per character, except for repeated
//     characters and common code pairs, which both vocabularies hold whole;
//   - whitespace between words is free, longer runs cost one token per change
//     of character;
//   - a non-ASCII character costs by its UTF-8 length and script: CJK and
//     Hangul two tokens, emoji three, two-byte scripts one.
//
// The result is never negative and never exceeds the fragment's byte length,
// the most tokens any byte-level BPE can produce, so it cannot overflow.
func preText(s []byte) int64 { return preScan(s) }

func preScan[T string | []byte](s T) int64 {
	var u int64
	n := len(s)
	i := 0
	for i < n {
		c := s[i]
		switch preByteClass[c] {
		case preClsLower, preClsUpper:
			j := i
			for j < n && preIsAlnum(s[j]) {
				j++
			}
			u += preWordCost(s[i:j])
			i = j
		case preClsDigit:
			j := i
			for j < n && preByteClass[s[j]] == preClsDigit {
				j++
			}
			u += int64((j-i+2)/3) * preUnit
			if i > 0 && preByteClass[s[i-1]] == preClsSpace {
				u += preUnit
			}
			i = j
		case preClsSpace:
			// The second deliberate change: a lone space or tab before a
			// three-byte character is charged with it (spacedRuneCost).
			if i+1 < n && preByteClass[s[i+1]] != preClsSpace && c != '\n' && c != '\r' {
				if size, cost, _ := spacedRuneCost([]byte(string(s[i+1:min(i+4, n)])), 0, c == ' '); size > 0 {
					u += cost
					i += 1 + size
					continue
				}
			}
			j := i + 1
			changes := 0
			newline := c == '\n' || c == '\r'
			for j < n && preByteClass[s[j]] == preClsSpace {
				if s[j] != s[j-1] {
					changes++
				}
				if s[j] == '\n' || s[j] == '\r' {
					newline = true
				}
				j++
			}
			u += preSpaceCost(j-i, changes, newline, j == n)
			i = j
		case preClsPunct:
			j := i
			for j < n && preByteClass[s[j]] == preClsPunct {
				j++
			}
			u += prePunctCost(s[i:j])
			i = j
		default:
			size, cost := preRuneCost(s, i)
			u += cost
			i += size
		}
	}
	// Byte-level BPE never needs more tokens than bytes.
	return min((u+preUnit-1)/preUnit, int64(n))
}

// isAlnum reports an ASCII letter or digit with one comparison: the three
// classes are consecutive and clsPunct (0) wraps around.
func preIsAlnum(c byte) bool { return preByteClass[c]-preClsLower <= preClsDigit-preClsLower }

// Per-run charges used by Text, in 1/unit tokens. The figures are tuned
// against cl100k_base and o200k_base on the accuracy corpus in
// accuracy_test.go; each one errs high.
const (
	// A word piece up to wordFreeLen letters is one token in both
	// vocabularies for almost all English and code words; every letter
	// beyond costs wordExtra.
	preWordFreeLen = 5
	preWordExtra   = preUnit / 4
	// All-capital pieces (acronyms, constants, shouting) split more.
	preCapsFreeLen = 3
	preCapsExtra   = preUnit / 2
	// A word made of short mixed-case and digit pieces is an identifier
	// or an encoded blob: BPE finds few merges, so letters cost more.
	preBlobMinLen = 10
	// A long piece with hardly any vowels is not a word either.
	preConsonantRunLen = 8
	preBlobExtra       = preUnit * 5 / 8
	// Repeated punctuation ("-----", "====") is held whole in long runs.
	preRepeatExtra = preUnit / 8
	// Whitespace runs (indentation) are held whole up to a length.
	preSpaceFreeLen = 16
	preSpacePerChar = preUnit / 32
)

// wordCost charges one maximal run of ASCII letters and digits.
func preWordCost[T string | []byte](w T) int64 {
	n := len(w)
	// First pass: count pieces to tell words from blobs.
	pieces, digits := 0, 0
	prev := uint8(preClsPunct)
	for i := 0; i < n; i++ {
		c := preByteClass[w[i]]
		if c != prev && !(prev == preClsUpper && c == preClsLower) {
			pieces++
		}
		if c == preClsDigit {
			digits++
		}
		prev = c
	}
	blob := (n >= preBlobMinLen && pieces*4 > n) || (digits > 0 && digits < n && pieces >= 3)
	var u int64
	i := 0
	for i < n {
		c := preByteClass[w[i]]
		if c == preClsDigit {
			j := i
			for j < n && preByteClass[w[j]] == preClsDigit {
				j++
			}
			u += int64((j-i+2)/3) * preUnit
			i = j
			continue
		}
		// A letter piece: upper-case letters then lower-case letters.
		j := i
		for j < n && preByteClass[w[j]] == preClsUpper {
			j++
		}
		upper := j - i
		for j < n && preByteClass[w[j]] == preClsLower {
			j++
		}
		l := j - i
		switch {
		case blob, l >= preConsonantRunLen && preVowels(w[i:j])*6 < l:
			u += preUnit + int64(l-1)*preBlobExtra
		case l == upper: // all capitals
			u += preUnit
			if l > preCapsFreeLen {
				u += int64(l-preCapsFreeLen) * preCapsExtra
			}
		default:
			u += preUnit
			if l > preWordFreeLen {
				u += int64(l-preWordFreeLen) * preWordExtra
			}
		}
		i = j
	}
	return u
}

// spaceCost charges a whitespace run of k bytes with the given number of
// character changes. A lone space or tab rides on the next piece; a lone
// one at the end of the text, and any newline, is a token of its own.
func preSpaceCost(k, changes int, newline, atEnd bool) int64 {
	if k == 1 && !newline {
		if atEnd {
			return preUnit
		}
		return 0
	}
	return preUnit + int64(changes)*preUnit + int64(max(k-preSpaceFreeLen, 0))*preSpacePerChar
}

// punctIndex numbers the 32 ASCII punctuation characters for pairTable.
var prePunctIndex = func() (t [256]uint8) {
	next := uint8(0)
	for c := 0; c < 128; c++ {
		if preByteClass[c] == preClsPunct && c >= 0x20 && c < 0x7f {
			t[c] = next
			next++
		} else {
			t[c] = 0xff
		}
	}
	for c := 128; c < 256; c++ {
		t[c] = 0xff
	}
	return t
}()

// commonPairs are punctuation pairs both vocabularies hold as one token,
// so the second character of such a pair is free.
const preCommonPairs = `() {} [] ); ), (" ") ", ": ': ', ;" {" "} [" "] }, ], }; => == != <= >= -> :: // /* */ ** -- ++ && || .. ', (' ') $( ${ {{ }} [[ ]] (( )) </ /> <! !- :/ #! %s .( ). ". ." ,' '. ?" !" ": ;' ]) ]; ([ (_ _( __ .* .- -. /. ./ :" ," }) }) [' '] #[ @" #{ ?. ?: |> <- :) (: ;} {{ += -= *= /= %= |= &= ^= ~/ !( !! !== === ...`

var prePairTable = func() (t [32]uint32) {
	for i := 0; i+1 < len(preCommonPairs); i++ {
		a, b := preCommonPairs[i], preCommonPairs[i+1]
		if a == ' ' || b == ' ' || a == '\n' || b == '\n' {
			continue
		}
		ia, ib := prePunctIndex[a], prePunctIndex[b]
		if ia < 32 && ib < 32 {
			t[ia] |= 1 << ib
		}
	}
	return t
}()

// punctCost charges a run of ASCII punctuation: one token per character,
// less for repeats and for the second character of a common pair.
func prePunctCost[T string | []byte](p T) int64 {
	var u int64
	pairable := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if i > 0 && c == p[i-1] {
			u += preRepeatExtra
			pairable = false
			continue
		}
		if pairable {
			ia, ib := prePunctIndex[p[i-1]], prePunctIndex[c]
			if ia < 32 && ib < 32 && prePairTable[ia]&(1<<ib) != 0 {
				pairable = false
				continue
			}
		}
		u += preUnit
		pairable = true
	}
	return u
}

// vowels counts the vowels (y included) of an ASCII letter piece.
func preVowels[T string | []byte](p T) int {
	v := 0
	for i := 0; i < len(p); i++ {
		switch p[i] | 0x20 {
		case 'a', 'e', 'i', 'o', 'u', 'y':
			v++
		}
	}
	return v
}

// runeCost charges the non-ASCII character starting at s[i] and returns its
// length in bytes (at least 1, so the scan always advances). Byte-level BPE
// never needs more tokens than bytes, so no charge exceeds the byte length;
// an invalid or truncated sequence costs one token per byte.
func preRuneCost[T string | []byte](s T, i int) (size int, cost int64) {
	n := len(s)
	c := s[i]
	switch {
	case c >= 0xC2 && c <= 0xDF:
		if i+1 < n && preIsCont(s[i+1]) {
			return 2, preCostTwoByte
		}
	case c >= 0xE0 && c <= 0xEF:
		if i+2 < n && preIsCont(s[i+1]) && preIsCont(s[i+2]) {
			r := rune(c&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			return 3, preThreeByteCost(r)
		}
	case c >= 0xF0 && c <= 0xF4:
		if i+3 < n && preIsCont(s[i+1]) && preIsCont(s[i+2]) && preIsCont(s[i+3]) {
			return 4, preCostFourByte
		}
	}
	return 1, preUnit
}

func preIsCont(b byte) bool { return b&0xC0 == 0x80 }

const (
	// Latin accents, Greek, Cyrillic, Hebrew, Arabic: at most one token
	// per letter in both vocabularies for running text.
	preCostTwoByte = preUnit
	// Emoji and supplementary-plane characters: two or three tokens each
	// in cl100k_base, fewer in o200k_base.
	preCostFourByte = 3 * preUnit
)

// preThreeByteCost is the one deliberate change since the speed rewrite:
// three-byte characters are charged from the tokenizers' own counts (see
// threeByteCost) instead of two tokens each, one for typographic marks.
func preThreeByteCost(r rune) int64 { cost, _ := threeByteCost(r); return cost }

// Fixed charges besides text. OpenAI documents 3 tokens of framing per chat
// message plus the role, and 3 for priming the reply; the estimator charges
// messageFloor per message (framing and a one-token role) and requestBase
// per request.
const (
	preMessageFloor = 4
	preRequestBase  = 3
	// nameCost is the extra token OpenAI charges for a message "name".
	preNameCost = 1
	// Images are charged a fixed cost without decoding them: 85 tokens at
	// "low" detail (OpenAI's fixed low-detail cost) and otherwise 1600,
	// the most Anthropic charges for one image (about 1.15 megapixels at
	// 750 pixels per token) and more than OpenAI's 765 for a typical
	// high-detail image. Reconciliation settles the real figure.
	preImageLowCost  = 85
	preImageHighCost = 1600
)

// walker sums the estimate, saturating at MaxInput. Strings are measured
// in place; only those holding escapes are decoded, into scratch buffers
// the walk reuses, so a large body costs a handful of allocations.
type preWalker struct {
	total int64
	buf   []byte // decoded string values
	kbuf  []byte // decoded member names
}

func (w *preWalker) add(n int64) {
	if n <= 0 {
		return
	}
	if n >= MaxInput-w.total {
		w.total = MaxInput
		return
	}
	w.total += n
}

// str returns the decoded text of a String value. It aliases the body or
// w.buf, so it is valid only until the next call.
func (w *preWalker) str(v jsonx.Value) []byte {
	c := preStringContent(v)
	i := bytes.IndexByte(c, '\\')
	if i < 0 {
		return c
	}
	w.buf = preAppendUnescaped(append(preGrow(w.buf, len(c)), c[:i]...), c[i:])
	return w.buf
}

// grow empties buf and makes room for n bytes (a string's content never
// decodes to more bytes than it holds), at least doubling so a walk over
// growing strings allocates a few times at most.
func preGrow(buf []byte, n int) []byte {
	if cap(buf) < n {
		return make([]byte, 0, max(n, 2*cap(buf)))
	}
	return buf[:0]
}

// key returns a member name from ForEach decoded, aliasing the body or
// w.kbuf; valid only until the next call.
func (w *preWalker) key(raw []byte) []byte {
	i := bytes.IndexByte(raw, '\\')
	if i < 0 {
		return raw
	}
	w.kbuf = preAppendUnescaped(append(preGrow(w.kbuf, len(raw)), raw[:i]...), raw[i:])
	return w.kbuf
}

// strIs reports a String value whose decoded text is s.
func (w *preWalker) strIs(v jsonx.Value, s string) bool {
	return v.Kind == jsonx.String && string(w.str(v)) == s
}

func (w *preWalker) text(s []byte) { w.add(preText(s)) }

// raw charges a value by its JSON text: the safe charge for any shape the
// walk does not model, since backends render such values into the prompt.
func (w *preWalker) raw(v jsonx.Value) { w.add(preText(v.Raw)) }

// field charges one top-level field. Fields that are not prompt input
// (sampling parameters, metadata, ...) cost nothing.
func (w *preWalker) field(key []byte, v jsonx.Value) {
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
		w.add(preMessageFloor)
		w.stringOrRaw(v)
	case "system":
		w.add(preMessageFloor)
		w.content(v)
	}
}

// textCost is what stringOrRaw charges for v.
func (w *preWalker) textCost(v jsonx.Value) int64 {
	switch v.Kind {
	case jsonx.String:
		return preText(w.str(v))
	case jsonx.Null:
		return 0
	}
	return preText(v.Raw)
}

func (w *preWalker) stringOrRaw(v jsonx.Value) { w.add(w.textCost(v)) }

func (w *preWalker) messages(v jsonx.Value) {
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
func (w *preWalker) message(m jsonx.Value) {
	w.add(preMessageFloor)
	if m.Kind != jsonx.Object {
		w.raw(m)
		return
	}
	m.ForEach(func(rawKey []byte, f jsonx.Value) bool {
		k := w.key(rawKey)
		switch string(k) {
		case "role":
			// The floor covers a one-token role.
			w.add(w.textCost(f) - 1)
		case "content":
			w.content(f)
		case "name":
			w.add(preNameCost)
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
		return true
	})
}

// content charges message content: a string, or an array of parts.
func (w *preWalker) content(v jsonx.Value) {
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
func (w *preWalker) part(p jsonx.Value) {
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
		if w.strIs(p.Get("detail"), "low") || w.strIs(p.Path("image_url", "detail"), "low") {
			w.add(preImageLowCost)
		} else {
			w.add(preImageHighCost)
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
func (w *preWalker) prompt(v jsonx.Value) {
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
func (w *preWalker) input(v jsonx.Value) {
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

// The walk measures strings over the body's own bytes. jsonx can decode a
// string only into a new slice (StrBytes), one allocation per escaped
// string, and escapes ("\n", "\"") are in most real prompts; so escaped
// strings are decoded here into a buffer the walk reuses.

// stringContent returns the bytes between a String value's quotes (nil for
// other kinds).
func preStringContent(v jsonx.Value) []byte {
	if v.Kind != jsonx.String || len(v.Raw) < 2 {
		return nil
	}
	return v.Raw[1 : len(v.Raw)-1]
}

// appendUnescaped appends the decoding of validated string content c to
// dst. Escapes decode as encoding/json (and jsonx) decode them, an unpaired
// surrogate becoming U+FFFD; every other byte is copied as it is, so
// invalid UTF-8 keeps costing one token per byte, as it does in strings
// without escapes. Malformed escapes (impossible after validation) are
// copied rather than trusted.
func preAppendUnescaped(dst, c []byte) []byte {
	for i := 0; i < len(c); {
		j := bytes.IndexByte(c[i:], '\\')
		if j < 0 {
			return append(dst, c[i:]...)
		}
		dst = append(dst, c[i:i+j]...)
		i += j
		if i+1 >= len(c) {
			return append(dst, c[i:]...)
		}
		switch e := c[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := preHex4(c, i+2)
			if !ok {
				dst = append(dst, c[i:i+2]...)
				break
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2, ok := preHex4(c, i+2)
				if dec := utf16.DecodeRune(r, r2); ok && i+1 < len(c) && c[i] == '\\' && c[i+1] == 'u' && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			dst = append(dst, c[i:i+2]...)
		}
		i += 2
	}
	return dst
}

// hex4 reads the four hex digits at c[i:].
func preHex4(c []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(c) {
		return 0, false
	}
	var r rune
	for _, h := range c[i : i+4] {
		switch {
		case h >= '0' && h <= '9':
			h -= '0'
		case h >= 'a' && h <= 'f':
			h -= 'a' - 10
		case h >= 'A' && h <= 'F':
			h -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}

// Parse reads what admission reserves from one request body of any of the
// estimated routes (chat completions, completions, Responses, Anthropic
// messages) in one pass over the top-level object. The reservation is the
// input estimate plus Output with no further margin, so Input walks every
// field the backend renders into the prompt; see walk.go. defaultOutput is
// the ceiling when the body states none; it is clamped to [0, MaxOutput].
//
// The body is validated once by jsonx.Parse (so a body nested deeper than
// jsonx.MaxDepth is ErrNotJSON) and is only read, never kept: Model is a
// copy.
func preParse(body []byte, defaultOutput int64) (Request, error) {
	doc := jsonx.Parse(body)
	if doc.Kind != jsonx.Object {
		return Request{}, ErrNotJSON
	}
	// Deliberate change (repeated members): a repeated decisive member is
	// refused, found here by a second, independent reading of the names.
	// Deliberate change (case): a case-folded spelling is the member itself,
	// as Go's encoding/json reads it.
	decisiveNames := [...]string{"model", "max_tokens", "max_completion_tokens", "max_output_tokens", "n", "best_of", "stream", "stream_options"}
	canonical := func(key string) string {
		for _, f := range decisiveNames {
			if strings.EqualFold(key, f) {
				return f
			}
		}
		return key
	}
	seen := map[string]bool{}
	var dup error
	doc.Members(func(key string, _ jsonx.Value) bool {
		key = canonical(key)
		for _, f := range decisiveNames {
			if key == f && seen[f] {
				dup = DuplicateFieldError{Field: f}
				return false
			}
		}
		seen[key] = true
		return true
	})
	if dup != nil {
		return Request{}, dup
	}
	var r Request
	var w preWalker
	choices := int64(0)
	w.add(preRequestBase)
	doc.ForEach(func(rawKey []byte, v jsonx.Value) bool {
		key := w.key(rawKey)
		switch canonical(string(key)) {
		case "model":
			if v.Kind == jsonx.String {
				r.Model = v.Str() // a copy: the body may be rewritten later
			}
		case "stream":
			r.Stream = v.Kind == jsonx.True
		case "stream_options":
			r.StreamIncludeUsage = v.Get("include_usage").Kind == jsonx.True
		case "max_tokens", "max_completion_tokens", "max_output_tokens":
			// Deliberate change (zero ceilings): 0 states no ceiling.
			if n, ok := preOutputCeiling(v); ok && n > 0 {
				if !r.OutputStated || n > r.Output {
					r.Output = n
				}
				r.OutputStated = true
			}
		case "n", "best_of":
			// The ceiling is per choice: n (and legacy best_of, which
			// generates that many server-side) multiply what one request
			// may generate.
			if c, ok := preOutputCeiling(v); ok && c > choices {
				choices = c
			}
			w.field(key, v) // charged as input as before: a token at most
		default:
			w.field(key, v)
		}
		return true
	})
	if !r.OutputStated {
		r.Output = min(max(defaultOutput, 0), MaxOutput)
	}
	if choices > 1 {
		r.Choices = min(choices, MaxOutput)
	}
	r.Input = w.total
	return r, nil
}

// OutputCeiling reads one ceiling field (max_tokens and its siblings) the
// way pydantic-based upstreams coerce it, because they generate up to the
// coerced value: a JSON integer, an integral or fractional float (rounded
// up), or a string holding such a number, surrounded by ASCII whitespace and
// with underscores between digits allowed. A negative number, NaN, an
// infinity spelt out, a non-number or an unparsable string is no ceiling
// (false). Values above MaxOutput read as MaxOutput.
func preOutputCeiling(v jsonx.Value) (int64, bool) {
	switch v.Kind {
	case jsonx.Number:
		return preParseCeiling(v.Raw)
	case jsonx.String:
		// StrBytes allocates only for a string with escapes.
		return preParseCeiling(preTrimSpace(v.StrBytes()))
	}
	return 0, false
}

func preTrimSpace(s []byte) []byte {
	for len(s) > 0 && preByteClass[s[0]] == preClsSpace {
		s = s[1:]
	}
	for len(s) > 0 && preByteClass[s[len(s)-1]] == preClsSpace {
		s = s[:len(s)-1]
	}
	return s
}

// parseCeiling accepts only the characters of a decimal number, so
// strconv's "Inf", "NaN" and hex forms never get through.
func preParseCeiling(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 64 {
		return 0, false
	}
	var buf [64]byte
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c == '.', c == 'e', c == 'E', c == '+', c == '-':
			buf[n] = c
			n++
		case c == '_' && i > 0 && i+1 < len(s) && preIsDigit(s[i-1]) && preIsDigit(s[i+1]):
			// Python's int() and pydantic accept 32_000.
		default:
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(buf[:n]), 64)
	if err != nil && !(math.IsInf(f, 1)) {
		return 0, false
	}
	switch {
	case math.IsNaN(f), f < 0:
		return 0, false
	case f >= float64(MaxOutput):
		return MaxOutput, true
	}
	return int64(math.Ceil(f)), true
}

func preIsDigit(c byte) bool { return c >= '0' && c <= '9' }
