package estimate

import "strings"

// Encoding is the tokenizer a request's input is estimated for. Text never
// counts below cl100k_base nor o200k_base, which costs most on CJK and
// Hangul text: cl100k_base needs 1.4 to 1.7 times o200k_base's tokens on
// it. A request for a model known to use o200k_base is estimated for that
// encoding alone; every other model, Anthropic's and unknown names
// included, keeps the estimate that fits both.
type Encoding uint8

const (
	// AnyEncoding is an estimate never below either encoding's count.
	AnyEncoding Encoding = iota
	// O200k is an estimate never below o200k_base's count.
	O200k
)

func (e Encoding) String() string {
	if e == O200k {
		return "o200k_base"
	}
	return "any"
}

// o200kFamilies are the OpenAI model names tokenized with o200k_base; a
// family matches its own name and any name continuing it after "-" or "."
// (gpt-4o-mini, gpt-5.1, o1-preview), not a longer word (gpt-4one).
var o200kFamilies = []string{"gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4-mini", "gpt-oss", "codex-mini"}

// EncodingOf is the encoding a model's input is estimated for. A routing
// prefix ("openai/gpt-4o", "azure/gpt-4.1") names the same model.
func EncodingOf(model string) Encoding {
	if i := strings.LastIndexByte(model, '/'); i >= 0 {
		model = model[i+1:]
	}
	for _, f := range o200kFamilies {
		if startsFamily(model, f) {
			return O200k
		}
	}
	return AnyEncoding
}

// startsFamily reports model naming family f: f itself, or f followed by
// "-" or ".". A loop of byte comparisons: in the VM strings.HasPrefix with a
// prefix that is not a constant is two calls, each hundreds of
// instructions, and most families differ from the model at the first byte.
func startsFamily(model, f string) bool {
	if len(model) < len(f) {
		return false
	}
	for i := 0; i < len(f); i++ {
		if model[i] != f[i] {
			return false
		}
	}
	return len(model) == len(f) || model[len(f)] == '-' || model[len(f)] == '.'
}
