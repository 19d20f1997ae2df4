package jsonx

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGetReturnsFirstDuplicateLikeGjson(t *testing.T) {
	v := Parse([]byte(`{"model":"cheap","model":"expensive"}`))
	require.Equal(t, "cheap", v.Get("model").Str())
}

func TestGetComparesKeysAfterUnescaping(t *testing.T) {
	v := Parse([]byte(`{"m\u006fdel":1,"a\"b":2,"\ud83d\ude00":3,"x\/y":4,"plain":5}`))
	tests := []struct {
		key  string
		want string
	}{{"model", "1"}, {`a"b`, "2"}, {"😀", "3"}, {"x/y", "4"}, {"plain", "5"}, {"mode", ""}, {"modelx", ""}, {"", ""}}
	for _, tc := range tests {
		require.Equal(t, tc.want, string(v.Get(tc.key).Raw), "key %q", tc.key)
	}
}

func TestLookupsOnWrongKindsAreAbsent(t *testing.T) {
	arr := Parse([]byte(`[1,2]`))
	obj := Parse([]byte(`{"a":[1]}`))
	require.False(t, arr.Get("a").Exists())
	require.False(t, obj.Index(0).Exists())
	require.False(t, arr.Index(-1).Exists())
	require.False(t, arr.Index(2).Exists())
	require.False(t, Value{}.Path("a", "b").Exists())
	require.Equal(t, "", obj.Str())
	require.Equal(t, 0, Parse([]byte(`"abc"`)).Len())
	_, ok := Parse([]byte(`"abc"`)).Int()
	require.False(t, ok)
}

func TestParseRejectsNestingBeyondMaxDepth(t *testing.T) {
	t.Parallel()
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	tooDeep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	objDeep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	require.True(t, Valid([]byte(ok)))
	require.False(t, Valid([]byte(tooDeep)))
	require.False(t, Valid([]byte(objDeep)))
	require.False(t, Valid([]byte(strings.Repeat("[", 1<<20))), "a huge unclosed prefix is just invalid")
}

func TestParseTrimsWhitespaceAndViewsTheDocument(t *testing.T) {
	d := []byte(" \n{\"a\" : [ 1 , 2 ] }\t")
	v := Parse(d)
	require.Equal(t, Object, v.Kind)
	require.Equal(t, `{"a" : [ 1 , 2 ] }`, string(v.Raw))
	require.Equal(t, "[ 1 , 2 ]", string(v.Get("a").Raw))
	require.Equal(t, "2", string(v.Get("a").Index(1).Raw))
	require.Same(t, &d[2], &v.Raw[0], "Parse must not copy")
}

func TestIntIsExactOnDecimalDigits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{`32000`, 32000, true}, {`32000.0`, 32000, true}, {`3.2e4`, 32000, true}, {`"32000"`, 32000, true},
		{`320E+2`, 32000, true}, {`-0`, 0, true}, {`0.000`, 0, true}, {`0e-999999999`, 0, true},
		{`9223372036854775807`, math.MaxInt64, true}, {`-9223372036854775808`, math.MinInt64, true},
		{`9223372036854775808`, 0, false}, {`-9223372036854775809`, 0, false}, {`1e19`, 0, false},
		{`9.223372036854775807e18`, math.MaxInt64, true}, {`1e999999999999`, 0, false},
		{`1.5`, 0, false}, {`1e-400`, 0, false}, {`1.0000000000000000001`, 0, false}, {`12e-1`, 0, false},
		{`" 32000"`, 0, false}, {`"32000 "`, 0, false}, {`"0x10"`, 0, false}, {`"1_000"`, 0, false},
		{`""`, 0, false}, {`true`, 0, false}, {`null`, 0, false}, {`"3\u0032"`, 0, false},
	}
	for _, tc := range tests {
		v := Parse([]byte(tc.in))
		require.True(t, v.Exists(), tc.in)
		n, ok := v.Int()
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, n, tc.in)
	}
}

func TestFloatAcceptsOnlyJSONNumberSpelling(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{`1.5`, 1.5, true}, {`"1.5"`, 1.5, true}, {`-2E-3`, -0.002, true}, {`1e400`, 0, false},
		{`"inf"`, 0, false}, {`"NaN"`, 0, false}, {`"0x1p3"`, 0, false}, {`" 1"`, 0, false}, {`"+1"`, 0, false},
		{`false`, 0, false}, {`[1]`, 0, false},
	}
	for _, tc := range tests {
		f, ok := Parse([]byte(tc.in)).Float()
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.want, f, tc.in)
	}
}

func TestBoolAcceptsOnlyJSONBooleans(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]bool{`true`: {true, true}, `false`: {false, true}, `"true"`: {}, `1`: {}, `null`: {}} {
		b, ok := Parse([]byte(in)).Bool()
		require.Equal(t, want, [2]bool{b, ok}, in)
	}
}

func TestStrDecodesLikeEncodingJSON(t *testing.T) {
	tests := []string{
		`"plain"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
		"\"\xff\xc3(\"", "\"\xed\xa0\x80\"", `"\u0000\b\f\n\r\t\/\\\""`, `"\uFFFD"`, "\"日本\"",
	}
	for _, in := range tests {
		var want string
		require.NoError(t, json.Unmarshal([]byte(in), &want), in)
		v := Parse([]byte(in))
		require.Equal(t, want, v.Str(), in)
		require.Equal(t, want, string(v.StrBytes()), in)
		require.Equal(t, len(want), v.StrLen(), in)
	}
}

func TestStrBytesAliasesRawWhenNothingToDecode(t *testing.T) {
	t.Parallel()
	v := Parse([]byte(`"hello wörld"`))
	b := v.StrBytes()
	require.Same(t, &v.Raw[1], &b[0])
	require.Equal(t, len(b), cap(b), "appending must not overwrite the document")
}

func TestUnquoteRejectsAnythingButOneStringLiteral(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{`"a\nb"`: true, `""`: true, `"a`: false, `"a"b`: false, `a`: false, ``: false, `"\q"`: false, "\"\x01\"": false} {
		_, got := Unquote([]byte(in))
		require.Equal(t, ok, got, in)
	}
	s, _ := Unquote([]byte(`"a\u00e9"`))
	require.Equal(t, "aé", s)
}

func TestForEachGivesRawKeysAndStopsOnFalse(t *testing.T) {
	t.Parallel()
	v := Parse([]byte(`{"a\n":1, "b":[2], "c":3}`))
	var keys []string
	v.ForEach(func(key []byte, val Value) bool {
		keys = append(keys, string(key)+"="+string(val.Raw))
		return string(key) != "b"
	})
	require.Equal(t, []string{`a\n=1`, `b=[2]`}, keys)
	var elems []string
	Parse([]byte(`[ 1 ,"x", {"y":[]} ]`)).ForEach(func(key []byte, val Value) bool {
		require.Nil(t, key)
		elems = append(elems, string(val.Raw))
		return true
	})
	require.Equal(t, []string{"1", `"x"`, `{"y":[]}`}, elems)
}

func TestReadersDoNotAllocate(t *testing.T) {
	doc := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi \u00e9 there"}],"max_tokens":3.2e4,"n":1.5}`)
	v := Parse(doc)
	allocs := testing.AllocsPerRun(100, func() {
		msgs := v.Get("messages")
		_ = msgs.Len()
		msgs.ForEach(func(_ []byte, m Value) bool {
			_ = m.Get("content").StrLen()
			return true
		})
		_, _ = v.Get("max_tokens").Int()
		_, _ = v.Get("n").Float()
		_ = v.Get("model").StrBytes()
		_ = v.Path("messages").Index(0).Get("role")
		v.Members(func(string, Value) bool { return true })
	})
	require.Zero(t, allocs)
}

func TestAppendStringAlwaysWritesValidJSON(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`}, {"q\"b\\", `"q\"b\\"`}, {"\n\r\t\x00\x1f", `"\n\r\t\u0000\u001f"`},
		{"\xff", `"\ufffd"`}, {"a\xc3", `"a\ufffd"`}, {"é😀", `"é😀"`}, {"\u2028\u2029", `"\u2028\u2029"`}, {"", `""`},
	}
	for _, tc := range tests {
		got := AppendString([]byte("x"), tc.in)
		require.Equal(t, "x"+tc.want, string(got))
		require.True(t, json.Valid(got[1:]))
	}
}

func TestAppendIntWritesDecimal(t *testing.T) {
	t.Parallel()
	require.Equal(t, "-42", string(AppendInt(nil, -42)))
}

func TestSetMemberKeepsEveryOtherByte(t *testing.T) {
	t.Parallel()
	tests := []struct{ doc, key, raw, want string }{
		{`{"a": 1 , "b":2}`, "a", `[3]`, `{"a": [3] , "b":2}`},
		{` {"a":1}` + "\n", "c", `true`, ` {"a":1,"c":true}` + "\n"},
		{`{ }`, "k", `"v"`, `{"k":"v" }`},
		{`{"a":1,"a":2}`, "a", `9`, `{"a":9,"a":2}`},
		{`{"m\u006f":1}`, "mo", `2`, `{"m\u006f":2}`},
		{`{"a":1}`, "q\"", ` null `, `{"a":1,"q\"":null}`},
	}
	for _, tc := range tests {
		doc := []byte(tc.doc)
		got, ok := SetMember(doc, tc.key, []byte(tc.raw))
		require.True(t, ok, tc.doc)
		require.Equal(t, tc.want, string(got))
		require.Equal(t, tc.doc, string(doc), "input untouched")
	}
	for _, bad := range [][2]string{{`[1]`, `1`}, {`{"a":1`, `1`}, {`{}`, `tru`}, {`{}`, ``}, {``, `1`}, {`"{}"`, `1`}} {
		_, ok := SetMember([]byte(bad[0]), "a", []byte(bad[1]))
		require.False(t, ok, "%q %q", bad[0], bad[1])
	}
}

func TestSetPathCreatesIntermediatesButNeverClobbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		doc  string
		path []string
		want string
		ok   bool
	}{
		{`{"model":"x"}`, []string{"stream_options", "include_usage"}, `{"model":"x","stream_options":{"include_usage":true}}`, true},
		{`{"stream_options":{}}`, []string{"stream_options", "include_usage"}, `{"stream_options":{"include_usage":true}}`, true},
		{`{"stream_options":{"include_usage":false}}`, []string{"stream_options", "include_usage"}, `{"stream_options":{"include_usage":true}}`, true},
		{`{"stream_options":null}`, []string{"stream_options", "include_usage"}, ``, false},
		{`{"a":{"b":[1]}}`, []string{"a", "b", "c"}, ``, false},
		{`{}`, nil, ``, false},
		{`[]`, []string{"a"}, ``, false},
	}
	for _, tc := range tests {
		got, ok := SetPath([]byte(tc.doc), tc.path, []byte("true"))
		require.Equal(t, tc.ok, ok, tc.doc)
		require.Equal(t, tc.want, string(got), tc.doc)
	}
}

func TestSetPathRefusesResultsDeeperThanMaxDepth(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1)
	_, ok := SetMember([]byte(`{}`), "a", []byte(deep))
	require.True(t, ok, "exactly MaxDepth")
	_, ok = SetPath([]byte(`{}`), []string{"a", "b"}, []byte(deep))
	require.False(t, ok)
}

// Hand-built Values may hold any bytes: results are unspecified but nothing
// may panic or loop forever.
func TestHandBuiltValuesOnGarbageNeverPanic(t *testing.T) {
	garbage := []string{``, `{`, `[`, `"`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":1,`, `["\`, `[1,`, `{,}`, `[,]`, `{"a"1}`, `\`, "\"\\u12", `"\ud83d\`}
	for _, g := range garbage {
		for k := Null; k <= Object; k++ {
			v := Value{Kind: k, Raw: []byte(g)}
			require.NotPanics(t, func() {
				v.Get("a")
				v.Path("a", "b")
				v.Index(0)
				v.Index(3)
				v.Len()
				v.ForEach(func([]byte, Value) bool { return true })
				v.Members(func(string, Value) bool { return true })
				v.Str()
				v.StrBytes()
				v.StrLen()
				v.Float()
				v.Int()
				v.Bool()
			}, "%v %q", k, g)
		}
	}
}

func TestKeysWithInvalidUTF8MatchTheMemberSetMemberWrote(t *testing.T) {
	out, ok := SetMember([]byte(`{}`), "a\x8b", []byte(`1`))
	require.True(t, ok)
	require.Equal(t, `{"a\ufffd":1}`, string(out))
	require.Equal(t, "1", string(Parse(out).Get("a\x8b").Raw))
	out, ok = SetMember(out, "a\x8b", []byte(`2`))
	require.True(t, ok)
	require.Equal(t, `{"a\ufffd":2}`, string(out), "replaced, not duplicated")
}

// AppendInt writes what strconv writes, at every length and both signs.
func TestAppendIntWritesWhatStrconvWrites(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, 9, 10, 99, 100, 101, 12345678, 99999999, 100000000, 100000001, 1e12, 1800000000,
		1<<32 - 1, 1 << 32, 9999999999999999, 1e18, math.MaxInt64, math.MinInt64, -1, -10, -1e8, -123456789012} {
		require.Equal(t, strconv.FormatInt(n, 10), string(AppendInt([]byte("x"), n))[1:], "%d", n)
	}
}

func FuzzAppendIntWritesWhatStrconvWrites(f *testing.F) {
	f.Add(int64(1e12))
	f.Add(int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, n int64) {
		require.Equal(t, strconv.FormatInt(n, 10), string(AppendInt(nil, n)))
	})
}

// The validator checks with a 64-level stack first and again with the
// MaxDepth stack when a value nests deeper: around that boundary every
// verdict is encoding/json's, the depth reported is the value's own, and a
// bracket closed wrongly far out (where only the second check's stack holds
// the level's kind) is still caught.
func TestValuesNestedAroundTheShallowStackAreCheckedAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	shapes := map[string]func(depth int) (open, close string){
		"arrays": func(n int) (string, string) { return strings.Repeat("[", n), strings.Repeat("]", n) },
		"objects": func(n int) (string, string) {
			return strings.Repeat(`{"a":`, n), strings.Repeat("}", n)
		},
		"objects in arrays": func(n int) (string, string) {
			var o, c strings.Builder
			for i := range n {
				if i%2 == 0 {
					o.WriteString(`[1,`)
				} else {
					o.WriteString(`{"k":`)
				}
			}
			for i := n - 1; i >= 0; i-- {
				if i%2 == 0 {
					c.WriteString(`]`)
				} else {
					c.WriteString(`}`)
				}
			}
			return o.String(), c.String()
		},
	}
	for name, shape := range shapes {
		for depth := 62; depth <= 67; depth++ {
			open, close := shape(depth)
			docs := map[string]string{
				"valid":                  open + "0" + close,
				"trailing comma inside":  open + "0," + close,
				"outermost closed wrong": open + "0" + close[:len(close)-1] + map[byte]string{']': "}", '}': "]"}[close[len(close)-1]],
				"a member after it":      `{"x":` + open + "0" + close + `,"y":true}`,
			}
			for what, doc := range docs {
				end, got, ok := validate([]byte(doc), 0)
				require.Equal(t, json.Valid([]byte(doc)), ok, "%s, %d deep, %s", name, depth, what)
				if ok {
					require.Equal(t, len(doc), end, "%s, %d deep, %s", name, depth, what)
					require.Equal(t, depthOf(doc), got, "%s, %d deep, %s: the depth reached", name, depth, what)
				}
			}
		}
	}
}
