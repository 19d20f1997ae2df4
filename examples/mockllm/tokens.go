package mockllm

import (
	"strings"

	"github.com/tidwall/gjson"
)

// perMessage is the fixed overhead charged for every message, like the role and separator tokens
// real tokenizers add.
const perMessage = 4

// InputTokens is the mock's deterministic input token count for a request body; tests compare
// budgets against it, so it is a pure function of the body. It adds, for each message, 4 plus the
// number of whitespace-separated words of its text. Messages are: Chat/Anthropic `messages[]`
// (text = `content` as a string, or the `text` of each content part), Anthropic `system` and
// Responses `instructions` (one message each when present), Responses `input` (a string is one
// message; each array item is one, with its `content` read as above), and legacy Completions
// `prompt` (a string is one message, each string of an array one). An invalid body counts 0.
func InputTokens(body []byte) int64 {
	if !gjson.ValidBytes(body) {
		return 0
	}
	root := gjson.ParseBytes(body)
	var n int64
	count := func(text gjson.Result) { n += perMessage + textWords(text) }

	if v := root.Get("system"); v.Exists() && v.Type != gjson.Null {
		count(v)
	}
	if v := root.Get("instructions"); v.Type == gjson.String {
		count(v)
	}
	root.Get("messages").ForEach(func(_, m gjson.Result) bool {
		count(m.Get("content"))
		return true
	})
	switch in := root.Get("input"); {
	case in.Type == gjson.String:
		count(in)
	case in.IsArray():
		in.ForEach(func(_, item gjson.Result) bool {
			if item.Type == gjson.String {
				count(item)
			} else {
				count(item.Get("content"))
			}
			return true
		})
	}
	switch p := root.Get("prompt"); {
	case p.Type == gjson.String:
		count(p)
	case p.IsArray():
		p.ForEach(func(_, s gjson.Result) bool {
			if s.Type == gjson.String {
				count(s)
			}
			return true
		})
	}
	return n
}

// textWords counts the words of a content value: a string, an array of parts (strings or objects
// with "text"), or one part object.
func textWords(v gjson.Result) int64 {
	switch {
	case v.Type == gjson.String:
		return int64(len(strings.Fields(v.Str)))
	case v.IsArray():
		var n int64
		v.ForEach(func(_, part gjson.Result) bool {
			n += textWords(part)
			return true
		})
		return n
	case v.IsObject():
		if t := v.Get("text"); t.Type == gjson.String {
			return int64(len(strings.Fields(t.Str)))
		}
	}
	return 0
}

// OutputCeiling is the most output tokens the request allows: the largest of max_tokens,
// max_completion_tokens and max_output_tokens, whether written as an integer, a float, an
// exponent or a numeric string. 0 means the request sets no ceiling.
func OutputCeiling(body []byte) int64 {
	var ceiling int64
	for _, r := range gjson.GetManyBytes(body, "max_tokens", "max_completion_tokens", "max_output_tokens") {
		var v int64
		switch r.Type {
		case gjson.Number:
			v = int64(r.Num)
		case gjson.String:
			v = r.Int()
			if v == 0 {
				v = int64(r.Float())
			}
		default:
			continue
		}
		if v > ceiling {
			ceiling = v
		}
	}
	return ceiling
}

// answerText is the generated text for n tokens: "tok" words separated by single spaces.
func answerText(n int64) string {
	if n <= 0 {
		return ""
	}
	return "tok" + strings.Repeat(" tok", int(n-1))
}

// deltaText is the text of the delta carrying tokens [from, from+count) of the answer, so that the
// concatenated deltas equal answerText.
func deltaText(from, count int64) string {
	var b strings.Builder
	for i := from; i < from+count; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("tok")
	}
	return b.String()
}
