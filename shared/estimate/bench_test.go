package estimate

import (
	"encoding/json"
	"testing"
)

// chatBody builds a chat request of about size bytes from the corpus's
// prose and code, the traffic the estimator sees most.
func chatBody(size int) []byte {
	var msgs []any
	n := 0
	for i := 0; n < size; i++ {
		s := proseSentences[i%len(proseSentences)]
		if i%3 == 0 {
			s = codeSnippets[i%len(codeSnippets)]
		}
		if n+len(s)+40 > size && n > 0 {
			break
		}
		msgs = append(msgs, map[string]any{"role": "user", "content": s})
		n += len(s) + 40
	}
	b, err := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs, "max_tokens": 1024})
	if err != nil {
		panic(err)
	}
	return b
}

func benchParse(b *testing.B, size int) {
	body := chatBody(size)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(body, 4096); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse1KiB(b *testing.B)  { benchParse(b, 1<<10) }
func BenchmarkParse64KiB(b *testing.B) { benchParse(b, 64<<10) }
func BenchmarkParse1MiB(b *testing.B)  { benchParse(b, 1<<20) }

func BenchmarkText(b *testing.B) {
	var text []byte
	for i := 0; len(text) < 64<<10; i++ {
		text = append(text, proseSentences[i%len(proseSentences)]...)
		text = append(text, codeSnippets[i%len(codeSnippets)]...)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		Text(text)
	}
}
