package estimate

import (
	"errors"
	"testing"
)

var fuzzSeeds = []string{
	``, `{}`, `[]`, `{"messages":[{"role":"user","content":"hi"}]}`,
	`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"detail":"low"}}]}]}`,
	`{"max_tokens":"1e400","max_completion_tokens":-1,"max_output_tokens":" 7_0 "}`,
	`{"prompt":[[1,2],[3]],"input":[{"role":"user","content":"x"},1,"s",[2]],"system":[{"text":"s"}],"instructions":{"a":1}}`,
	`{"tools":[{"function":{"name":"f"}}],"response_format":{"type":"json_object"},"text":{"format":{}}}`,
	`{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
	"{\"messages\":[{\"content\":\"\xff\xfe\xe4\xb8\"}]}",
	`{"messages":"not an array","input":{"role":"user"},"system":7}`,
	`{"model":"a","m\u006fdel":"b","max_tokens":0,"stream_options":{"include_usage":true,"include_usage":false}}`,
	`{"messages":[{"model":"a","model":"b"}],"max_tokens":-3,"max_output_tokens":"0","n":1,"n":2}`,
	`{"messages":[{"content":[{"text":"a\u003cb","type":"text"},{"type":"text","text":"\ud55c"},{"type":"image"}],"role":"user"}]}`,
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), int64(4096))
	}
	f.Fuzz(func(t *testing.T, body []byte, def int64) {
		r, err := Parse(body, def)
		if err != nil {
			var dup DuplicateFieldError
			if !errors.Is(err, ErrNotJSON) && !(errors.As(err, &dup) && isDecisive(dup.Field)) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if r.OutputStated && r.Output <= 0 {
			t.Fatalf("a stated ceiling is positive: %+v", r)
		}
		if r.Input < 0 || r.Input > MaxInput {
			t.Fatalf("input %d out of range", r.Input)
		}
		if h := r.Hold(); h < r.Input || h > MaxInput+MaxOutput {
			t.Fatalf("hold %d out of range", h)
		}
		if r.Output < 0 || r.Output > MaxOutput {
			t.Fatalf("output %d out of range", r.Output)
		}
	})
}

func FuzzText(f *testing.F) {
	for _, s := range append(fuzzSeeds, "😀 中文 1234 qwxzvkjpq \t\n  ~^|`", "9a5f80b7-c3d2") {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		n := Text(s)
		if n < 0 || n > int64(len(s)) {
			t.Fatalf("Text(%q) = %d", s, n)
		}
		if m := TextString(string(s)); m != n {
			t.Fatalf("Text and TextString disagree on %q: %d != %d", s, n, m)
		}
		if c := textCounts(s); c.any != n || c.o200k < 0 || c.o200k > n {
			t.Fatalf("textCounts(%q) = %+v, Text %d: the o200k_base estimate must lie in [0, Text]", s, c, n)
		}
	})
}

func isDecisive(name string) bool {
	i, _ := decisive([]byte(name))
	return i >= 0
}
