package estimate

import "github.com/tidwall/gjson"

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

// walker sums the estimate, saturating at MaxInput.
type walker struct{ total int64 }

func (w *walker) add(n int64) {
	if n <= 0 {
		return
	}
	if n >= MaxInput-w.total {
		w.total = MaxInput
		return
	}
	w.total += n
}

func (w *walker) text(s string) { w.add(TextString(s)) }

// raw charges a value by its JSON text: the safe charge for any shape the
// walk does not model, since backends render such values into the prompt.
func (w *walker) raw(v gjson.Result) { w.add(TextString(v.Raw)) }

// field charges one top-level field. Fields that are not prompt input
// (sampling parameters, metadata, ...) cost nothing.
func (w *walker) field(key string, v gjson.Result) {
	switch key {
	case "messages":
		w.messages(v)
	case "tools", "functions", "response_format":
		w.raw(v)
	case "text":
		// Responses' structured-output schema lives in text.format.
		if v.IsObject() {
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

func (w *walker) stringOrRaw(v gjson.Result) {
	switch v.Type {
	case gjson.String:
		w.text(v.Str)
	case gjson.Null:
	default:
		w.raw(v)
	}
}

func (w *walker) messages(v gjson.Result) {
	if !v.IsArray() {
		w.raw(v)
		return
	}
	v.ForEach(func(_, m gjson.Result) bool {
		w.message(m)
		return true
	})
}

// message charges one chat or Responses message: the floor, then every
// field, because backends render tool calls, names and provider extras
// into the prompt too.
func (w *walker) message(m gjson.Result) {
	w.add(messageFloor)
	if !m.IsObject() {
		w.raw(m)
		return
	}
	m.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "role":
			// The floor covers a one-token role.
			w.add(TextString(f.String()) - 1)
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
			if f.Type != gjson.Null {
				w.text(k.Str)
				w.stringOrRaw(f)
			}
		}
		return true
	})
}

// content charges message content: a string, or an array of parts.
func (w *walker) content(v gjson.Result) {
	if !v.IsArray() {
		w.stringOrRaw(v)
		return
	}
	v.ForEach(func(_, p gjson.Result) bool {
		w.part(p)
		return true
	})
}

// part charges one content part or block (OpenAI and Anthropic spellings):
// the text of text parts, a fixed cost for images, the nested content of
// tool results, and the JSON text of anything else.
func (w *walker) part(p gjson.Result) {
	if !p.IsObject() {
		w.stringOrRaw(p)
		return
	}
	switch p.Get("type").String() {
	case "text", "input_text", "output_text":
		w.stringOrRaw(p.Get("text"))
	case "image_url", "input_image", "image":
		if p.Get("detail").String() == "low" || p.Get("image_url.detail").String() == "low" {
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
func (w *walker) prompt(v gjson.Result) {
	if !v.IsArray() {
		w.stringOrRaw(v)
		return
	}
	v.ForEach(func(_, e gjson.Result) bool {
		switch {
		case e.Type == gjson.Number:
			w.add(1)
		case e.IsArray():
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
func (w *walker) input(v gjson.Result) {
	if !v.IsArray() {
		w.stringOrRaw(v)
		return
	}
	v.ForEach(func(_, e gjson.Result) bool {
		switch {
		case e.Type == gjson.Number:
			w.add(1)
		case e.IsArray():
			w.input(e)
		case e.IsObject() && (e.Get("role").Exists() || e.Get("content").Exists()):
			w.message(e)
		default:
			w.stringOrRaw(e)
		}
		return true
	})
}
