package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func addSeeds(f *testing.F) {
	for _, d := range handDocs {
		f.Add([]byte(d))
	}
	f.Add([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream_options":{"include_usage":false}}`))
}

func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, d []byte) {
		v := Parse(d)
		if depthOf(string(d)) <= MaxDepth {
			require.Equal(t, json.Valid(d), Valid(d))
		} else {
			// Counting brackets overestimates (they may sit in strings), so
			// only "jsonx valid implies encoding/json valid" holds here.
			require.True(t, !Valid(d) || json.Valid(d))
		}
		require.Equal(t, Valid(d), v.Exists())
		// Whatever the bytes, readers must not panic.
		garbage := Value{Kind: Object, Raw: d}
		garbage.Len()
		garbage.Get("a")
		Value{Kind: Array, Raw: d}.Index(1)
		Value{Kind: String, Raw: d}.StrLen()
		Value{Kind: Number, Raw: d}.Int()
		if !v.Exists() {
			return
		}
		var ref any
		dec := json.NewDecoder(bytes.NewReader(d))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&ref))
		if obj, ok := ref.(map[string]any); ok {
			// Top-level members: ForEach must cover exactly the keys encoding/json
			// decoded (duplicates collapse in the map, so compare key sets).
			seen := map[string]bool{}
			v.ForEach(func(key []byte, val Value) bool {
				k, ok := Unquote(append(append([]byte{'"'}, key...), '"'))
				require.True(t, ok)
				seen[k] = true
				require.True(t, val.Exists())
				return true
			})
			require.Len(t, seen, len(obj))
			for k := range obj {
				require.True(t, seen[k], "missing %q", k)
			}
		}
		if s, ok := ref.(string); ok {
			require.Equal(t, s, v.Str())
			require.Equal(t, len(s), v.StrLen())
		}
	})
}

func FuzzSetMember(f *testing.F) {
	f.Add([]byte(`{}`), "a", []byte(`1`))
	f.Add([]byte(` { "a" : [1] , "b":{} } `), "b", []byte(`{"x":"\u00e9"}`))
	f.Add([]byte(`{"a\u0062":1}`), "ab", []byte(`null`))
	f.Add([]byte(`[]`), "a", []byte(`1`))
	f.Fuzz(func(t *testing.T, obj []byte, key string, raw []byte) {
		out, ok := SetMember(obj, key, raw)
		isObj := Parse(obj).Kind == Object
		if !isObj || !Valid(raw) {
			require.False(t, ok)
			return
		}
		require.True(t, ok)
		require.True(t, Valid(out), "%q", out)
		require.True(t, json.Valid(out))
		require.Equal(t, Parse(raw).Raw, Parse(out).Get(key).Raw, "the member now holds raw")
		out2, ok := SetPath(obj, []string{key, "k"}, raw)
		if ok {
			require.True(t, Valid(out2), "%q", out2)
		}
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\x1f", "\xff", "é😀", "\u2028", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Add("admitted")
	f.Add("a4a6d307ad00fa67176e1099fdbc4f4a09bb527a7f24718a5030f2f173d11f7f")
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString(nil, s)
		// The plain-string path writes exactly what the escaper writes,
		// after whatever dst held.
		require.Equal(t, AppendStringWith(nil, s, 0), out)
		require.Equal(t, append([]byte("pre"), out...), AppendString([]byte("pre"), s))
		require.True(t, json.Valid(out))
		require.True(t, Valid(out))
		got, ok := Unquote(out)
		require.True(t, ok)
		if utf8.ValidString(s) {
			require.Equal(t, s, got)
			var ref string
			require.NoError(t, json.Unmarshal(out, &ref))
			require.Equal(t, s, ref)
		}
	})
}
