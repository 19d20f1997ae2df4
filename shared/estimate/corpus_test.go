package estimate

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
)

// corpusRequest is one generated request with the ground truth the
// accuracy test tokenizes: the texts the backend renders into the prompt
// (the same fields the estimator walks) and the fixed overhead OpenAI
// documents (3 tokens per message plus its role's tokens, which the texts
// carry, 1 per name, 3 to prime the reply) and a typical image cost.
type corpusRequest struct {
	class    string
	body     []byte
	texts    []string
	overhead int64
}

// Ground-truth image costs: OpenAI's documented figures for a low-detail
// image and a 1024x1024 high-detail one.
const (
	truthImageLow  = 85
	truthImageHigh = 765
)

type gen struct {
	rng      *rand.Rand
	texts    []string
	overhead int64
}

func marshal(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func (g *gen) pick(list []string) string { return list[g.rng.IntN(len(list))] }

// walked records a text the backend renders into the prompt.
func (g *gen) walked(s string) string { g.texts = append(g.texts, s); return s }

// raw records a value the estimator counts by its JSON text.
func (g *gen) raw(v any) any { g.walked(marshal(v)); return v }

func (g *gen) msg(role string, content any) map[string]any {
	g.overhead += 3
	g.walked(role)
	if s, ok := content.(string); ok {
		g.walked(s)
	}
	return map[string]any{"role": role, "content": content}
}

func (g *gen) textPart(typ, s string) map[string]any {
	return map[string]any{"type": typ, "text": g.walked(s)}
}

func (g *gen) imagePart(low bool) map[string]any {
	detail := "high"
	g.overhead += truthImageHigh
	if low {
		detail = "low"
		g.overhead += truthImageLow - truthImageHigh
	}
	return map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://example.com/cat.png", "detail": detail}}
}

func (g *gen) sentences(list []string, lo, hi int) string {
	n := lo + g.rng.IntN(hi-lo+1)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.pick(list)
	}
	sep := " "
	if g.rng.IntN(3) == 0 {
		sep = "\n\n"
	}
	return strings.Join(parts, sep)
}

func (g *gen) prose() string { return g.sentences(proseSentences, 1, 8) }

func (g *gen) code() string {
	lang := []string{"go", "python", "javascript", ""}[g.rng.IntN(4)]
	intro := g.pick([]string{"Review this code and point out bugs:", "Why does this fail?", "Refactor the following for readability.", "Add tests for this:"})
	return intro + "\n\n```" + lang + "\n" + g.sentences(codeSnippets, 1, 4) + "```\n"
}

func (g *gen) word() string {
	w := strings.Fields(g.pick(proseSentences))
	return strings.Trim(w[g.rng.IntN(len(w))], ".,;:?!\"'")
}

func (g *gen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.rng.IntN(256))
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (g *gen) jsonValue(depth int) any {
	switch k := g.rng.IntN(9); {
	case depth > 0 && k == 0:
		m := map[string]any{}
		for i := 0; i < 2+g.rng.IntN(5); i++ {
			m[strings.ToLower(g.word())+"_"+g.word()] = g.jsonValue(depth - 1)
		}
		return m
	case depth > 0 && k == 1:
		a := make([]any, 1+g.rng.IntN(4))
		for i := range a {
			a[i] = g.jsonValue(depth - 1)
		}
		return a
	case k == 2:
		return g.rng.IntN(1_000_000)
	case k == 3:
		return float64(g.rng.IntN(100000)) / 100
	case k == 4:
		return g.rng.IntN(2) == 0
	case k == 5:
		return g.uuid()
	case k == 6:
		return strings.ToLower(g.word()) + "@example.com"
	default:
		return g.pick(proseSentences)
	}
}

func (g *gen) jsonDoc() string {
	m := map[string]any{}
	for i := 0; i < 3+g.rng.IntN(6); i++ {
		m[g.word()] = g.jsonValue(3)
	}
	if g.rng.IntN(2) == 0 {
		b, _ := json.MarshalIndent(m, "", "  ")
		return string(b)
	}
	return marshal(m)
}

func (g *gen) cjk() string {
	var list []string
	switch g.rng.IntN(4) {
	case 0:
		list = chineseSentences
	case 1:
		list = japaneseSentences
	case 2:
		list = koreanSentences
	default:
		list = append(append(append([]string{}, chineseSentences...), japaneseSentences...), proseSentences[:10]...)
	}
	return g.sentences(list, 1, 8)
}

func (g *gen) emojiText() string {
	words := strings.Fields(g.prose())
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		for g.rng.IntN(3) == 0 {
			b.WriteString(g.pick(emojis))
		}
	}
	for i := 0; i < g.rng.IntN(10); i++ {
		b.WriteString(g.pick(emojis))
	}
	return b.String()
}

func (g *gen) blob() string {
	raw := make([]byte, 20+g.rng.IntN(600))
	for i := range raw {
		raw[i] = byte(g.rng.IntN(256))
	}
	var enc string
	switch g.rng.IntN(5) {
	case 0:
		enc = base64.StdEncoding.EncodeToString(raw)
	case 1:
		enc = base64.URLEncoding.EncodeToString(raw)
	case 2:
		enc = hex.EncodeToString(raw)
	case 3:
		enc = "sk-proj-" + base64.RawURLEncoding.EncodeToString(raw[:20]) + " " + g.uuid() + " " + g.uuid()
	default:
		lines := base64.StdEncoding.EncodeToString(raw)
		var b strings.Builder
		for len(lines) > 76 {
			b.WriteString(lines[:76] + "\n")
			lines = lines[76:]
		}
		enc = b.String() + lines
	}
	return g.pick([]string{"Decode this attachment:", "What is in this payload?", "Here is the key:", ""}) + " " + enc
}

func (g *gen) mixed() string {
	parts := []string{g.prose(), g.sentences(otherScriptSentences, 1, 4), g.cjk(), g.emojiText(), g.code(), strconv.Itoa(g.rng.IntN(1 << 30)), g.blob()[:40]}
	g.rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	return strings.Join(parts[:2+g.rng.IntN(4)], "\n")
}

// chat wraps texts from one generator in a chat completions request.
func (g *gen) chat(text func() string) map[string]any {
	var msgs []any
	if g.rng.IntN(2) == 0 {
		msgs = append(msgs, g.msg("system", g.prose()))
	}
	for i := 0; i < 1+g.rng.IntN(3); i++ {
		msgs = append(msgs, g.msg("user", text()))
		if g.rng.IntN(2) == 0 {
			msgs = append(msgs, g.msg("assistant", text()))
		}
	}
	return map[string]any{"model": "gpt-4o", "messages": msgs, "max_tokens": 512}
}

// proseChat is a conversation held entirely in the language of list, so
// the class measures that language alone.
func (g *gen) proseChat(list []string) map[string]any {
	var msgs []any
	for i := 0; i < 1+g.rng.IntN(3); i++ {
		msgs = append(msgs, g.msg("user", g.sentences(list, 2, 10)))
		if g.rng.IntN(2) == 0 {
			msgs = append(msgs, g.msg("assistant", g.sentences(list, 2, 10)))
		}
	}
	return map[string]any{"model": "gpt-4o", "messages": msgs, "max_tokens": 512}
}

var weatherTool = map[string]any{"type": "function", "function": map[string]any{
	"name": "get_weather", "description": "Get the current weather for a city, in metric units.",
	"parameters": map[string]any{"type": "object", "properties": map[string]any{
		"city":  map[string]any{"type": "string", "description": "City name, e.g. Paris"},
		"units": map[string]any{"type": "string", "enum": []any{"metric", "imperial"}},
	}, "required": []any{"city"}},
}}

func (g *gen) toolsChat() map[string]any {
	req := g.chat(g.prose)
	msgs := req["messages"].([]any)
	call := []any{map[string]any{"id": "call_" + g.uuid()[:8], "type": "function", "function": map[string]any{"name": "get_weather", "arguments": marshal(map[string]any{"city": g.word()})}}}
	g.overhead += 3
	g.walked("assistant")
	msgs = append(msgs, map[string]any{"role": "assistant", "content": nil, "tool_calls": g.raw(call)})
	tm := g.msg("tool", g.jsonDoc())
	tm["tool_call_id"] = g.walked("call_" + g.uuid()[:8])
	msgs = append(msgs, tm)
	named := g.msg("user", []any{g.textPart("text", g.prose()), g.imagePart(g.rng.IntN(2) == 0)})
	named["name"] = g.walked("alice_" + strconv.Itoa(g.rng.IntN(100)))
	g.overhead++
	msgs = append(msgs, named)
	req["messages"] = msgs
	req["tools"] = g.raw([]any{weatherTool})
	if g.rng.IntN(2) == 0 {
		req["response_format"] = g.raw(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "answer", "schema": weatherTool["function"].(map[string]any)["parameters"]}})
	}
	req["max_completion_tokens"] = "2048"
	return req
}

func (g *gen) anthropic() map[string]any {
	g.overhead += 4 // the system prompt is framed like a message
	system := []any{g.textPart("text", g.prose()), g.textPart("text", g.code())}
	var msgs []any
	for i := 0; i < 1+g.rng.IntN(3); i++ {
		msgs = append(msgs, g.msg("user", []any{g.textPart("text", g.mixed())}))
		use := map[string]any{"type": "tool_use", "id": "toolu_" + g.uuid()[:12], "name": "search", "input": map[string]any{"query": g.word()}}
		msgs = append(msgs, g.msg("assistant", []any{g.textPart("text", g.prose()), g.raw(use)}))
		id := "toolu_" + g.uuid()[:12]
		g.walked(id)
		msgs = append(msgs, g.msg("user", []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": []any{g.textPart("text", g.jsonDoc())}}}))
	}
	return map[string]any{"model": "claude-sonnet-4-5", "system": system, "messages": msgs, "max_tokens": 32000.0, "stream": true}
}

func (g *gen) responses() map[string]any {
	g.overhead += 4
	req := map[string]any{"model": "gpt-5", "instructions": g.walked(g.prose()), "max_output_tokens": " 8000 "}
	var items []any
	for i := 0; i < 1+g.rng.IntN(3); i++ {
		items = append(items, g.msg("user", []any{g.textPart("input_text", g.prose())}))
		items = append(items, g.msg("assistant", []any{g.textPart("output_text", g.code())}))
		items = append(items, g.raw(map[string]any{"type": "function_call", "call_id": "call_" + g.uuid()[:8], "name": "get_weather", "arguments": `{"city":"Oslo"}`}))
		items = append(items, g.raw(map[string]any{"type": "function_call_output", "call_id": "call_" + g.uuid()[:8], "output": g.jsonDoc()}))
	}
	req["input"] = items
	req["text"] = g.raw(map[string]any{"format": map[string]any{"type": "json_schema", "name": "answer", "schema": weatherTool["function"].(map[string]any)["parameters"]}})
	return req
}

func (g *gen) completions() map[string]any {
	if g.rng.IntN(2) == 0 {
		return map[string]any{"model": "gpt-3.5-turbo-instruct", "prompt": g.walked(g.prose() + "\n" + g.code())}
	}
	return map[string]any{"model": "gpt-3.5-turbo-instruct", "prompt": []any{g.walked(g.prose()), g.walked(g.cjk())}}
}

// corpusClasses names the classes in report order.
var corpusClasses = []string{"prose", "code", "json", "cjk", "emoji", "base64", "mixed", "tools", "anthropic", "responses", "completions",
	"korean", "japanese", "chinese"}

// buildCorpus generates perClass requests of every class from a fixed seed.
func buildCorpus(perClass int) []corpusRequest {
	rng := rand.New(rand.NewPCG(4, 46259854))
	var out []corpusRequest
	for _, class := range corpusClasses {
		for i := 0; i < perClass; i++ {
			g := &gen{rng: rng, overhead: 3} // OpenAI primes the reply with 3 tokens
			var req map[string]any
			switch class {
			case "prose":
				req = g.chat(g.prose)
			case "code":
				req = g.chat(g.code)
			case "json":
				req = g.chat(g.jsonDoc)
			case "cjk":
				req = g.chat(g.cjk)
			case "emoji":
				req = g.chat(g.emojiText)
			case "base64":
				req = g.chat(g.blob)
			case "mixed":
				req = g.chat(g.mixed)
			case "tools":
				req = g.toolsChat()
			case "anthropic":
				req = g.anthropic()
			case "responses":
				req = g.responses()
			case "completions":
				req = g.completions()
			case "korean":
				req = g.proseChat(koreanProse)
			case "japanese":
				req = g.proseChat(japaneseProse)
			case "chinese":
				req = g.proseChat(chineseProse)
			}
			out = append(out, corpusRequest{class: class, body: []byte(marshal(req)), texts: g.texts, overhead: g.overhead})
		}
	}
	return out
}
