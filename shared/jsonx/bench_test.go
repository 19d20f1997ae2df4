package jsonx

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// benchDoc builds an object of about size bytes shaped like a chat request:
// many message-like members whose contents are long strings with the odd
// escape, followed by the member "last".
func benchDoc(size int) []byte {
	r := rand.New(rand.NewPCG(7, 8))
	words := []string{"token", "budget", "envoy", "é", "filter", `\"quoted\"`, "limit", "\\n", "wasm", "日本"}
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o",`)
	for i := 0; b.Len() < size; i++ {
		b.WriteString(`"m` + strconv.Itoa(i) + `":{"role":"user","content":"`)
		for j := 0; j < 40; j++ {
			b.WriteString(words[r.IntN(len(words))] + " ")
		}
		b.WriteString(`","n":[1,2.5,-3e4,true,null]},`)
	}
	b.WriteString(`"last":42}`)
	return []byte(b.String())
}

// messagesDoc is an OpenAI chat body of about size bytes.
func messagesDoc(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","stream":true,"messages":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"role":"user","content":"` + strings.Repeat("How many tokens is this sentence? ", 8) + `"}`)
	}
	b.WriteString(`],"max_tokens":1024}`)
	return []byte(b.String())
}

func BenchmarkGetLastMember1MiB(b *testing.B) {
	doc := benchDoc(1 << 20)
	b.Run("jsonx/Get", func(b *testing.B) {
		v := Parse(doc)
		measureCPU(b, len(doc), func() {
			if n, _ := v.Get("last").Int(); n != 42 {
				b.Fatal(n)
			}
		})
	})
	b.Run("jsonx/Parse+Get", func(b *testing.B) {
		measureCPU(b, len(doc), func() {
			if n, _ := Parse(doc).Get("last").Int(); n != 42 {
				b.Fatal(n)
			}
		})
	})
	b.Run("gjson/GetBytes", func(b *testing.B) {
		measureCPU(b, len(doc), func() {
			if n := gjson.GetBytes(doc, "last").Int(); n != 42 {
				b.Fatal(n)
			}
		})
	})
	b.Run("gjson/ValidBytes+GetBytes", func(b *testing.B) {
		measureCPU(b, len(doc), func() {
			if !gjson.ValidBytes(doc) || gjson.GetBytes(doc, "last").Int() != 42 {
				b.Fatal()
			}
		})
	})
}

func BenchmarkValid1MiB(b *testing.B) {
	doc := benchDoc(1 << 20)
	b.Run("jsonx", func(b *testing.B) {
		measureCPU(b, len(doc), func() {
			if !Valid(doc) {
				b.Fatal()
			}
		})
	})
	b.Run("gjson", func(b *testing.B) {
		measureCPU(b, len(doc), func() {
			if !gjson.ValidBytes(doc) {
				b.Fatal()
			}
		})
	})
}

// The estimator's loop: walk every message and measure its content.
func BenchmarkForEachMessages64KiB(b *testing.B) {
	doc := messagesDoc(64 << 10)
	b.Run("jsonx", func(b *testing.B) {
		v := Parse(doc)
		measureCPU(b, len(doc), func() {
			total := 0
			v.Get("messages").ForEach(func(_ []byte, m Value) bool {
				total += m.Get("content").StrLen() + m.Get("role").StrLen()
				return true
			})
			if total == 0 {
				b.Fatal()
			}
		})
	})
	b.Run("gjson", func(b *testing.B) {
		measureCPU(b, len(doc), func() {
			total := 0
			gjson.GetBytes(doc, "messages").ForEach(func(_, m gjson.Result) bool {
				total += len(m.Get("content").String()) + len(m.Get("role").String())
				return true
			})
			if total == 0 {
				b.Fatal()
			}
		})
	})
}
