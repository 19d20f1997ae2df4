package config

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// exampleConfigs are every example the repository ships.
func exampleConfigs(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "configs", "*.json"))
	require.NoError(t, err)
	files = append(files, filepath.Join("..", "..", "examples", "local", "plugin.json"))
	require.GreaterOrEqual(t, len(files), 3)
	out := map[string][]byte{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		out[filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f)] = raw
	}
	return out
}

// requireSameAsReference pins the decoder to what Parse did with
// encoding/json: the same Config on success, the same problems (text and
// order) on failure.
func requireSameAsReference(t *testing.T, raw []byte) (ok bool) {
	t.Helper()
	want, wantErr := parseReference(raw)
	got, err := Parse(raw)
	if wantErr != nil {
		require.Error(t, err, "encoding/json refused it: %v\n%s", wantErr, raw)
		require.Equal(t, wantErr.Error(), err.Error(), "%s", raw)
		return false
	}
	require.NoError(t, err, "%s", raw)
	require.True(t, reflect.DeepEqual(want, got), "decoded differently:\nwant %#v\ngot  %#v\n%s", want, got, raw)
	return true
}

func TestDecoderMatchesEncodingJSONOnTheExamples(t *testing.T) {
	t.Parallel()
	for name, raw := range exampleConfigs(t) {
		t.Run(name, func(t *testing.T) {
			require.True(t, requireSameAsReference(t, raw))
		})
	}
}

// Each example re-spelled many ways (member order, number spellings,
// escapes, whitespace, members dropped or nulled) still decodes exactly as
// encoding/json decoded it.
func TestDecoderMatchesEncodingJSONOnRespelledExamples(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	for name, raw := range exampleConfigs(t) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var tree any
		require.NoError(t, dec.Decode(&tree))
		valid := 0
		for i := 0; i < 300; i++ {
			var b []byte
			b = respell(rng, b, tree, i%3 == 0)
			if requireSameAsReference(t, b) {
				valid++
			}
		}
		require.Greater(t, valid, 100, name)
	}
}

// respell writes tree as JSON with random but meaning-preserving choices;
// with drop it also removes members and replaces values with null.
func respell(rng *rand.Rand, b []byte, v any, drop bool) []byte {
	ws := func() {
		switch rng.IntN(4) {
		case 0:
			b = append(b, ' ')
		case 1:
			b = append(b, "\n\t"...)
		}
	}
	ws()
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		b = append(b, '{')
		first := true
		for _, k := range keys {
			if drop && rng.IntN(5) == 0 {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = respellString(rng, b, k)
			b = append(b, ':')
			if drop && rng.IntN(10) == 0 {
				b = append(b, "null"...)
				continue
			}
			b = respell(rng, b, x[k], drop)
		}
		b = append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = respell(rng, b, e, drop)
		}
		b = append(b, ']')
	case string:
		if isDecimalString(x) {
			// Number strings stay unescaped: see
			// TestEscapedNumberStringIsRefusedWithItsPath.
			b = append(b, `"`+x+`"`...)
			break
		}
		b = respellString(rng, b, x)
	case json.Number:
		b = respellNumber(rng, b, x.String())
	case bool:
		b = strconv.AppendBool(b, x)
	case nil:
		b = append(b, "null"...)
	}
	ws()
	return b
}

// respellString escapes random characters (\u, short escapes) so keys and
// values exercise the unescaping paths.
func respellString(rng *rand.Rand, b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '/' && rng.IntN(2) == 0:
			b = append(b, `\/`...)
		case r < 0x20 || (r < 0x10000 && rng.IntN(6) == 0):
			b = append(b, `\u`...)
			h := strconv.FormatInt(int64(r), 16)
			b = append(b, strings.Repeat("0", 4-len(h))+h...)
		case r >= 0x10000 && rng.IntN(2) == 0:
			r -= 0x10000
			b = append(b, `\u`+strconv.FormatInt(0xd800+int64(r>>10), 16)+`\u`+strconv.FormatInt(0xdc00+int64(r&0x3ff), 16)...)
		default:
			b = append(b, string(r)...)
		}
	}
	return append(b, '"')
}

// respellNumber writes an integer as one of the spellings Int accepts and a
// fraction as one Float accepts (a number token or a decimal string).
func respellNumber(rng *rand.Rand, b []byte, n string) []byte {
	if _, err := strconv.ParseInt(n, 10, 64); err == nil {
		switch rng.IntN(6) {
		case 0:
			return append(b, n+".0"...)
		case 1:
			return append(b, n+"e0"...)
		case 2:
			return append(b, `"`+n+`"`...)
		case 3:
			return append(b, `"`+n+`.00"`...)
		case 4:
			return append(b, n+"0E-1"...)
		}
		return append(b, n...)
	}
	if rng.IntN(2) == 0 && isDecimalString(n) {
		return append(b, `"`+n+`"`...)
	}
	return append(b, n...)
}

// TestDecoderMatchesEncodingJSONOnGeneratedConfigs writes random documents
// shaped by the Config type itself (every field, map and list), with typos,
// wrong types and bad numbers mixed in, and compares the outcome, problems
// included, with encoding/json's.
func TestDecoderMatchesEncodingJSONOnGeneratedConfigs(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	valid, invalid := 0, 0
	for i := 0; i < 3000; i++ {
		g := &configGen{rng: rng, faults: i%2 == 1}
		raw := g.value(nil, reflect.TypeFor[Config](), 0)
		if requireSameAsReference(t, raw) {
			valid++
		} else {
			invalid++
		}
	}
	require.Greater(t, valid, 1000)
	require.Greater(t, invalid, 500)
}

type configGen struct {
	rng    *rand.Rand
	faults bool // mix in unknown fields, wrong types and bad numbers
}

func (g *configGen) fault() bool { return g.faults && g.rng.IntN(25) == 0 }

var (
	genKeys    = []string{"gpt-4.1", "claude-4", "pro", "free", "a<b&c", "ключ", "", "x y", "emoji😀", "sep\u2028", "tab\t", `q"uote`}
	genStrings = []string{"", "memory", "redis", "clamp", "refuse", "10.0.0.0/8", "::1", "sk-test", "sha256:" + strings.Repeat("ab", 32), "X-Api-Key", "ünïcode", "😀", "a\\b\"c/d", "bad\xffutf8"}
	genWrong   = []string{`true`, `false`, `1`, `-2.5`, `"s"`, `[]`, `[1,"x"]`, `{}`, `{"a":1}`}
	genInts    = []string{`0`, `1`, `7`, `32000`, `32000.0`, `3.2e4`, `"32000"`, `"32000.000"`, `-1`, `-1.0`, `"-5"`, `9223372036854775807`, `1e18`}
	genBadInts = []string{`1.5`, `"1.5"`, `"3.2e4"`, `"abc"`, `""`, `" 1"`, `1e400`, `"99999999999999999999"`, `9.3e18`}
	genFloats  = []string{`0`, `2.5`, `"2.5"`, `25e-1`, `0.001`, `"7"`, `-1`, `1e300`}
	genBadFlts = []string{`"fast"`, `"2.5e1"`, `1e400`, `"1."`, `"-"`}
	genUSD     = []string{`0`, `200`, `"200.00"`, `0.15`, `"0.15"`, `1e-6`, `"2.5e-06"`, `"0.000000001"`}
	genBadUSD  = []string{`-1`, `"-0.5"`, `0.0000000001`, `"1e-10"`, `1e10`, `"NaN"`, `""`, `" 1"`, `"$5"`}
	genDurs    = []string{`"60s"`, `"1m30s"`, `"500ms"`, `60`, `0.5`, `"60"`}
	genBadDurs = []string{`"-1s"`, `-1`, `"soon"`, `"1m30"`, `""`, `"5.s"`}
)

func (g *configGen) pick(s []string) string { return s[g.rng.IntN(len(s))] }

func (g *configGen) value(b []byte, t reflect.Type, depth int) []byte {
	if g.fault() {
		return append(b, g.pick(genWrong)...)
	}
	switch t {
	case reflect.TypeFor[Int]():
		if g.fault() {
			return append(b, g.pick(genBadInts)...)
		}
		return append(b, g.pick(genInts)...)
	case reflect.TypeFor[Float]():
		if g.fault() {
			return append(b, g.pick(genBadFlts)...)
		}
		return append(b, g.pick(genFloats)...)
	case reflect.TypeFor[USD]():
		if g.fault() {
			return append(b, g.pick(genBadUSD)...)
		}
		return append(b, g.pick(genUSD)...)
	case reflect.TypeFor[Duration]():
		if g.fault() {
			return append(b, g.pick(genBadDurs)...)
		}
		return append(b, g.pick(genDurs)...)
	}
	switch t.Kind() {
	case reflect.Pointer:
		if g.rng.IntN(8) == 0 {
			return append(b, "null"...)
		}
		return g.value(b, t.Elem(), depth)
	case reflect.String:
		return appendQuoted(b, g.pick(genStrings))
	case reflect.Bool:
		return strconv.AppendBool(b, g.rng.IntN(2) == 0)
	case reflect.Slice:
		if g.rng.IntN(10) == 0 {
			return append(b, "null"...)
		}
		b = append(b, '[')
		n := g.rng.IntN(4)
		for i := 0; i < n; i++ {
			if i > 0 {
				b = append(b, ',')
			}
			if g.rng.IntN(10) == 0 {
				b = append(b, "null"...)
				continue
			}
			b = g.value(b, t.Elem(), depth+1)
		}
		return append(b, ']')
	case reflect.Map:
		if g.rng.IntN(10) == 0 {
			return append(b, "null"...)
		}
		b = append(b, '{')
		keys := g.rng.Perm(len(genKeys))[:g.rng.IntN(4)]
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendQuoted(b, genKeys[k]), ':')
			if g.rng.IntN(10) == 0 {
				b = append(b, "null"...)
				continue
			}
			b = g.value(b, t.Elem(), depth+1)
		}
		return append(b, '}')
	case reflect.Struct:
		b = append(b, '{')
		n := 0
		for _, i := range g.rng.Perm(t.NumField()) {
			if depth > 0 && g.rng.IntN(2) == 0 {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			name := JSONName(t.Field(i))
			if g.fault() {
				name = typo(g.rng, name)
			}
			b = append(appendQuoted(b, name), ':')
			b = g.value(b, t.Field(i).Type, depth+1)
		}
		if g.fault() {
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, `"unknown_thing":1`...)
		}
		return append(b, '}')
	}
	panic("configGen: unhandled type " + t.String())
}

// typo changes one letter, or the case of the first, so the name is unknown
// but close enough for "did you mean".
func typo(rng *rand.Rand, name string) string {
	if rng.IntN(2) == 0 {
		return strings.ToUpper(name[:1]) + name[1:]
	}
	i := rng.IntN(len(name))
	return name[:i] + "q" + name[i+1:]
}

func TestEveryConfigTypeHasADecodePlan(t *testing.T) {
	seen := map[*plan]bool{}
	var walk func(p *plan)
	walk = func(p *plan) {
		if seen[p] {
			return
		}
		seen[p] = true
		require.NotEqual(t, planUnsupported, p.kind, p.typ.String())
		if p.elem != nil {
			walk(p.elem)
		}
		for _, f := range p.fields {
			walk(f.plan)
		}
	}
	walk(configPlan)
	require.Greater(t, len(seen), 10)
}

func TestRepeatedMemberNamesAreErrorsWithTheirPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, raw, want string }{
		{"top-level field", `{"identity":{},"identity":{}}`, `duplicate field "identity"`},
		{"limit written twice", `{"rate_limiting":{"limits":{"global":{"tokens_per_minute":100,"tokens_per_minute":0}}}}`,
			`rate_limiting.limits.global: duplicate field "tokens_per_minute"`},
		{"same name once escaped", `{"rate_limiting":{"storage":"redis","stor\u0061ge":"memory"}}`, `rate_limiting: duplicate field "storage"`},
		{"per_model entry", `{"rate_limiting":{"limits":{"per_model":{"gpt-4.1":{},"gpt-4.1":{"tokens_per_minute":1}}}}}`,
			`rate_limiting.limits.per_model: duplicate key "gpt-4.1"`},
		{"tier override", `{"rate_limiting":{"tier_overrides":{"pro":{},"pro":{}}}}`, `rate_limiting.tier_overrides: duplicate key "pro"`},
		{"models entry", `{"models":{"m":null,"m":{}}}`, `models: duplicate key "m"`},
		{"inside an api key", `{"api_keys":[{"key":"a","tier":"free","tier":"pro"}]}`, `api_keys[0]: duplicate field "tier"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.raw))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestRepeatedUnknownFieldIsReportedOnce(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"identity":{"x":1,"x":2}}`))
	require.Error(t, err)
	require.Equal(t, 1, strings.Count(err.Error(), `unknown field "x"`), err.Error())
}

func TestEmptyListsAndMapsStayPresentAndNullElementsStillCreateEntries(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`{"identity":{"api_key_headers":[]},"models":{"m":null},"api_keys":[null],"rate_limiting":{"tier_overrides":{}}}`))
	require.NoError(t, err)
	require.NotNil(t, c.Identity.APIKeyHeaders)
	require.Empty(t, c.Identity.APIKeyHeaders, "an empty header list is not the default list")
	require.Equal(t, map[string]ModelLimits{"m": {OnMaxTokens: defaultOnMaxTokens}}, c.Models)
	require.Equal(t, []APIKey{{}}, c.APIKeys)
	require.NotNil(t, c.RateLimiting.TierOverrides)
	requireSameAsReference(t, []byte(`{"identity":{"api_key_headers":[]},"models":{"m":null},"api_keys":[null],"rate_limiting":{"tier_overrides":{}}}`))
}

func TestProblemsComeOutInMemberNameOrderWhateverTheDocumentOrder(t *testing.T) {
	t.Parallel()
	raw := []byte(`{"token_budget":{"zz":1,"max_body_bytes":"x"},"identity":{"b":1,"a":2},"api_keys":{},"rate_limiting":{"storage":1}}`)
	requireSameAsReference(t, raw)
	_, err := Parse(raw)
	msg := err.Error()
	order := []string{"api_keys: must be an array", `identity: unknown field "a"`, `identity: unknown field "b"`, "rate_limiting.storage", "token_budget.max_body_bytes", `token_budget: unknown field "zz"`}
	last := -1
	for _, s := range order {
		i := strings.Index(msg, s)
		require.Greater(t, i, last, "%q out of order in\n%s", s, msg)
		last = i
	}
}

// encoding/json handed Int the raw token, escapes and all, after the shape
// check had passed on the decoded text; the decoder hands the same raw
// token but reports the refusal with its path.
func TestEscapedNumberStringIsRefusedWithItsPath(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"rate_limiting":{"max_buckets":"\u0035"}}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "rate_limiting.max_buckets: must be a whole number")
	_, refErr := parseReference([]byte(`{"rate_limiting":{"max_buckets":"\u0035"}}`))
	require.Error(t, refErr)
}

func TestInvalidJSONIsRefused(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{`{`, `{"a":1,}`, `{"a" 1}`, `{} x`, `{"rate_limiting":{"storage":"\x01"}}`, `{"a":tru}`, strings.Repeat("[", 600) + strings.Repeat("]", 600)} {
		_, err := Parse([]byte(raw))
		require.Error(t, err, raw)
		require.Contains(t, err.Error(), "parse plugin config")
	}
}

// Whatever the bytes, the decoder never panics, never accepts what
// encoding/json refused, and when both accept they agree exactly.
func FuzzParseMatchesEncodingJSON(f *testing.F) {
	for _, raw := range exampleConfigs(f) {
		f.Add(raw)
	}
	f.Add([]byte(`{"models":{"m":null},"api_keys":[null,{"key":"k"}]}`))
	f.Add([]byte(`{"rate_limiting":{"limits":{"per_model":{"a\u0062":{"requests_per_second":"2.5"}}}}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, err := Parse(raw)
		want, wantErr := parseReference(raw)
		if err == nil {
			require.NoError(t, wantErr)
			require.True(t, reflect.DeepEqual(want, got))
			return
		}
		if wantErr == nil && utf8.Valid(raw) {
			require.Contains(t, err.Error(), "duplicate", "only repeated names and invalid UTF-8 may be refused now and not before")
		}
	})
}

// encoding/json reads an invalid UTF-8 byte as U+FFFD; the config refuses
// it, so a model or key name cannot mean one thing here and another there.
func TestAConfigThatIsNotUTF8IsRefused(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"{\"pricing\":{\"\x98\":{}}}", "{\"api_keys\":[{\"key\":\"sk-\xff\"}]}"} {
		_, err := Parse([]byte(raw))
		require.ErrorContains(t, err, "not valid UTF-8", "%q", raw)
	}
}
