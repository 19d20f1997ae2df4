package jsonx

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// handDocs are edge cases for the differential test; random documents follow.
var handDocs = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `null`, `true`, `false`, `0`, `-0`, `1.5e+300`, `-1E-2`,
	`01`, `1.`, `.5`, `-`, `+1`, `1e`, `1e+`, `0x10`, `NaN`, `Infinity`, `tru`, `nul`, `truex`,
	`""`, `"a`, `"\u00e9"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`,
	`"\ud83d\ud83d\ude00"`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"", "\"\x7f\"", "\"\xff\xfe\"",
	"\"\xed\xa0\x80\"", `"\/\b\f\n\r\t\"\\"`, `{"a":1,}`, `[1,]`, `[,1]`, `{"a" 1}`, `{a:1}`,
	`{"a":1 "b":2}`, `{"a":1}}`, `[1]]`, `{"a":[}`, `{"a":{"b":{"c":[1,{"d":null}]}}}`,
	"{\"a\"\t:\r\n1\n}", `{"":""}`, `{"\u0061":1,"b\"c":2,"\ud83d\ude00":3}`, "\"\u2028\"",
	`{"a":"x"}garbage`, `[1 2]`, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":32000}`,
	"\xef\xbb\xbf{}", "{}\x00", `[1e400]`, `{"n":-1e-400}`, `"` + strings.Repeat(`\\`, 9) + `"`,
}

// genValue produces a random JSON value; objects get unique keys so that the
// reference (last-wins) and jsonx (first-wins) agree.
func genValue(r *rand.Rand, depth int) string {
	k := r.IntN(10)
	if depth > 5 && k >= 7 {
		k = r.IntN(7)
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2, 3:
		return genNumber(r)
	case 4, 5, 6:
		return genString(r)
	case 7, 8:
		var b strings.Builder
		b.WriteString("{")
		n := r.IntN(6)
		seen := map[string]bool{}
		first := true
		for i := 0; i < n; i++ {
			key := genString(r)
			var dec string
			if json.Unmarshal([]byte(key), &dec) != nil || seen[dec] {
				continue
			}
			seen[dec] = true
			if !first {
				b.WriteString(",")
			}
			first = false
			b.WriteString(genWS(r) + key + genWS(r) + ":" + genWS(r) + genValue(r, depth+1) + genWS(r))
		}
		b.WriteString("}")
		return b.String()
	default:
		var b strings.Builder
		b.WriteString("[" + genWS(r))
		n := r.IntN(5)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString("," + genWS(r))
			}
			b.WriteString(genValue(r, depth+1) + genWS(r))
		}
		b.WriteString("]")
		return b.String()
	}
}

func genWS(r *rand.Rand) string {
	if r.IntN(3) > 0 {
		return ""
	}
	return []string{" ", "\n", "\t", "\r\n  "}[r.IntN(4)]
}

func genNumber(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return strconv.Itoa(r.IntN(1000) - 500)
	case 1:
		return strconv.FormatInt(r.Int64()-r.Int64(), 10)
	case 2:
		return strconv.FormatFloat(r.NormFloat64()*1e6, 'g', -1, 64)
	case 3:
		return strconv.Itoa(r.IntN(100)) + "e" + []string{"", "+", "-"}[r.IntN(3)] + strconv.Itoa(r.IntN(30))
	case 4:
		return "-0." + strconv.Itoa(r.IntN(1e6)) + "E" + strconv.Itoa(r.IntN(5))
	default:
		return strconv.Itoa(r.IntN(10)) + ".0"
	}
}

func genString(r *rand.Rand) string {
	pieces := []string{"a", "b", "model", "é", "😀", "日本", `\"`, `\\`, `\/`, `\n`, `\t`, `\u0000`, `\u00e9`,
		`\ud83d\ude00`, `\ud83d`, `\ude00`, `\uD83D\uDE00`, "\xff", "\xc3", " ", "\u2028", `\b\f\r`}
	var b strings.Builder
	b.WriteString(`"`)
	n := r.IntN(6)
	for i := 0; i < n; i++ {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteString(`"`)
	return b.String()
}

// mutate damages a document so Valid gets plenty of invalid inputs too.
func mutate(r *rand.Rand, s string) string {
	if len(s) == 0 {
		return "x"
	}
	b := []byte(s)
	switch r.IntN(4) {
	case 0:
		return s[:r.IntN(len(s))]
	case 1:
		b[r.IntN(len(b))] = `{}[]",:\ae0-.`[r.IntN(13)]
	case 2:
		i := r.IntN(len(b))
		b = append(b[:i], b[i+1:]...)
	default:
		i := r.IntN(len(b))
		b = append(b[:i], append([]byte{byte(r.IntN(256))}, b[i:]...)...)
	}
	return string(b)
}

func differentialDocs() []string {
	r := rand.New(rand.NewPCG(1, 2))
	docs := append([]string(nil), handDocs...)
	for i := 0; i < 3000; i++ {
		v := genValue(r, 0)
		if i%3 == 0 {
			v = genWS(r) + v + genWS(r)
		}
		docs = append(docs, v)
		if i%2 == 0 {
			docs = append(docs, mutate(r, v))
		}
	}
	return docs
}

func decodeAny(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // 1e400 is valid JSON but not a float64
	require.NoError(t, dec.Decode(&v), "raw %q", raw)
	return v
}

// checkAgainstReference walks a valid document comparing every view jsonx
// gives with encoding/json's decoding of the same bytes.
func checkAgainstReference(t *testing.T, v Value, ref any) {
	t.Helper()
	require.Equal(t, ref, decodeAny(t, v.Raw))
	switch want := ref.(type) {
	case map[string]any:
		require.Equal(t, Object, v.Kind)
		require.Equal(t, len(want), v.Len())
		seen := 0
		v.Members(func(key string, val Value) bool {
			seen++
			sub, ok := want[key]
			require.True(t, ok, "key %q not in reference", key)
			require.Equal(t, val, v.Get(key), "Get(%q) finds the member Members saw", key)
			checkAgainstReference(t, val, sub)
			return true
		})
		require.Equal(t, len(want), seen)
		require.False(t, v.Get("\x00absent").Exists())
	case []any:
		require.Equal(t, Array, v.Kind)
		require.Equal(t, len(want), v.Len())
		for i := range want {
			checkAgainstReference(t, v.Index(i), want[i])
		}
		require.False(t, v.Index(len(want)).Exists())
	case string:
		require.Equal(t, String, v.Kind)
		require.Equal(t, want, v.Str())
		require.Equal(t, want, string(v.StrBytes()))
		require.Equal(t, len(want), v.StrLen())
		got, ok := Unquote(v.Raw)
		require.True(t, ok)
		require.Equal(t, want, got)
	case json.Number:
		require.Equal(t, Number, v.Kind)
		f, ok := v.Float()
		wantF, err := want.Float64()
		require.Equal(t, err == nil, ok, "Float of %s", want)
		if ok {
			require.Equal(t, wantF, f)
		}
		if wantI, err := want.Int64(); err == nil {
			n, ok := v.Int()
			require.True(t, ok, "Int of %s", want)
			require.Equal(t, wantI, n)
		}
	case bool:
		b, ok := v.Bool()
		require.True(t, ok)
		require.Equal(t, want, b)
	case nil:
		require.Equal(t, Null, v.Kind)
	}
}

func depthOf(s string) int {
	d, m := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{':
			d++
			m = max(m, d)
		case ']', '}':
			d--
		}
	}
	return m
}

func TestValidAndReadersAgreeWithEncodingJSON(t *testing.T) {
	valid := 0
	for _, doc := range differentialDocs() {
		d := []byte(doc)
		require.Equal(t, json.Valid(d), Valid(d), "doc %q", doc)
		v := Parse(d)
		require.Equal(t, json.Valid(d), v.Exists(), "doc %q", doc)
		if !v.Exists() {
			continue
		}
		valid++
		checkAgainstReference(t, v, decodeAny(t, d))
	}
	require.Greater(t, valid, 2000, "the generator must mostly produce valid documents")
}

func TestSetMemberAndSetPathAgreeWithEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	edits := 0
	for _, doc := range differentialDocs() {
		d := []byte(doc)
		v := Parse(d)
		if v.Kind != Object {
			_, ok := SetMember(d, "k", []byte("1"))
			require.False(t, ok, "SetMember on non-object %q", doc)
			continue
		}
		newVal := genValue(r, 3)
		var keys []string
		v.Members(func(key string, _ Value) bool { keys = append(keys, strings.Clone(key)); return true })
		targets := append(keys, "fresh", "")
		for _, key := range targets {
			out, ok := SetMember(d, key, []byte(newVal))
			require.True(t, ok)
			require.True(t, json.Valid(out) && Valid(out), "%q set %q = %s -> %q", doc, key, newVal, out)
			want := decodeAny(t, d).(map[string]any)
			want[key] = decodeAny(t, []byte(newVal))
			require.Equal(t, want, decodeAny(t, out))
			edits++
		}
		// Nested: into an existing object member, a missing one, or a scalar (refused).
		for _, key := range targets {
			out, ok := SetPath(d, []string{key, "inner", "leaf"}, []byte(newVal))
			want := decodeAny(t, d).(map[string]any)
			cur := want
			refused := false
			for _, step := range []string{key, "inner"} {
				next, present := cur[step]
				if !present {
					m := map[string]any{}
					cur[step] = m
					cur = m
					continue
				}
				m, isObj := next.(map[string]any)
				if !isObj {
					refused = true
					break
				}
				cur = m
			}
			if refused {
				require.False(t, ok, "%q path through non-object %q", doc, key)
				continue
			}
			require.True(t, ok)
			cur["leaf"] = decodeAny(t, []byte(newVal))
			require.True(t, json.Valid(out) && Valid(out))
			require.Equal(t, want, decodeAny(t, out))
		}
	}
	require.Greater(t, edits, 1000)
}
