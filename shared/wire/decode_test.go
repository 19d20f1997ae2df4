package wire

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// requireDecodesLikeEncodingJSON pins the contract of DecodeAdmitResponse:
// it fails exactly when json.Unmarshal into AdmitResponse fails and
// otherwise yields the same value, nil-versus-empty slices included.
func requireDecodesLikeEncodingJSON(t *testing.T, b []byte) {
	t.Helper()
	var want AdmitResponse
	wantErr := json.Unmarshal(b, &want)
	got, err := DecodeAdmitResponse(b)
	if wantErr != nil {
		require.Error(t, err, "encoding/json refused %q: %v", b, wantErr)
		require.Equal(t, AdmitResponse{}, got)
		return
	}
	require.NoError(t, err, "encoding/json accepted %q", b)
	require.Equal(t, want, got, "input %q", b)
}

func TestDecodeAdmitResponseAgreesWithEncodingJSONOnCornerCases(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"admitted with hold", `{"admitted":true,"hold":"0123456789abcdef0123456789abcdef"}`},
		{"private refusal with level", `{"admitted":false,"refusal":{"kind":3,"dimension":"api_key","budget":"minute","retry_after":12,"private":true,"level":{"capacity":10,"remaining":0,"reset_unix":1700000000}}}`},
		{"shared refusal without level", `{"refusal":{"kind":1,"dimension":"global","budget":"day","retry_after":86400}}`},
		{"refusal that exceeds capacity", `{"refusal":{"kind":3,"dimension":"global","budget":"minute","retry_after":90,"exceeds_capacity":true}}`},
		{"exceeds_capacity not a bool", `{"refusal":{"exceeds_capacity":1}}`},
		{"exceeds_capacity null", `{"refusal":{"exceeds_capacity":null}}`},
		{"levels and skipped", `{"admitted":true,"levels":[{"kind":2,"dimension":"d","budget":"b","level":{"capacity":1,"remaining":1,"reset_unix":2}}],"skipped":["a","b"]}`},
		{"whitespace everywhere", " \t\n{ \"admitted\" : true , \"levels\" : [ ] }\r\n"},
		{"empty object", `{}`},
		{"top-level null", `null`},
		{"top-level array", `[]`},
		{"top-level string", `"admitted"`},
		{"top-level number", `1`},
		{"empty input", ``},
		{"only whitespace", `   `},
		{"truncated", `{"admitted":true`},
		{"trailing garbage", `{"admitted":true}x`},
		{"two documents", `{} {}`},
		{"trailing comma", `{"admitted":true,}`},
		{"unknown members ignored", `{"x":[1,{"y":null}],"admitted":true,"z":"\u00e9"}`},
		{"dotless i does not match i", "{\"adm\u0131tted\":true}"},
		{"escaped key", `{"\u0061dmitted":true,"h\u006Fld":"x"}`},
		{"escaped key with bad surrogate", `{"\ud800admitted":true}`},
		{"last duplicate wins", `{"admitted":true,"admitted":false,"hold":"a","hold":"b"}`},
		{"null leaves a bool alone", `{"admitted":true,"admitted":null}`},
		{"null leaves a string alone", `{"hold":"a","hold":null}`},
		{"null clears a pointer", `{"refusal":{"kind":1},"refusal":null}`},
		{"duplicate pointer merges", `{"refusal":{"kind":1,"level":{"capacity":4}},"refusal":{"budget":"x","level":{"remaining":3}}}`},
		{"null clears level pointer", `{"refusal":{"level":{"capacity":4},"level":null}}`},
		{"null clears a slice", `{"skipped":["a"],"skipped":null}`},
		{"empty array is non-nil", `{"skipped":[],"levels":[]}`},
		{"duplicate slice reuses elements", `{"levels":[{"kind":1,"budget":"a"},{"kind":2}],"levels":[{"dimension":"d"}],"levels":[{},{}]}`},
		{"null element leaves it alone", `{"skipped":["a","b"],"skipped":[null,"c",null]}`},
		{"null level struct is a no-op", `{"levels":[{"level":null}]}`},
		{"null refusal fields", `{"refusal":{"kind":null,"dimension":null,"retry_after":null,"private":null}}`},
		{"bool as number", `{"admitted":1}`},
		{"bool as string", `{"admitted":"true"}`},
		{"string as number", `{"hold":5}`},
		{"int as float", `{"refusal":{"retry_after":1.0}}`},
		{"int with exponent", `{"refusal":{"retry_after":1e3}}`},
		{"int max", `{"refusal":{"retry_after":9223372036854775807}}`},
		{"int min", `{"refusal":{"retry_after":-9223372036854775808}}`},
		{"int overflow", `{"refusal":{"retry_after":9223372036854775808}}`},
		{"int underflow", `{"refusal":{"retry_after":-9223372036854775809}}`},
		{"int negative zero", `{"levels":[{"level":{"remaining":-0}}]}`},
		{"int as string", `{"refusal":{"retry_after":"5"}}`},
		{"kind max", `{"refusal":{"kind":255}}`},
		{"kind overflow", `{"refusal":{"kind":256}}`},
		{"kind negative", `{"refusal":{"kind":-1}}`},
		{"kind negative zero", `{"refusal":{"kind":-0}}`},
		{"kind fraction", `{"refusal":{"kind":1.5}}`},
		{"refusal as array", `{"refusal":[]}`},
		{"refusal as string", `{"refusal":"no"}`},
		{"level as number", `{"refusal":{"level":7}}`},
		{"levels as object", `{"levels":{}}`},
		{"levels element as array", `{"levels":[[]]}`},
		{"skipped element as number", `{"skipped":[1]}`},
		{"op level as string", `{"levels":[{"level":"full"}]}`},
		{"string escapes", `{"hold":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00"}`},
		{"lone surrogate becomes U+FFFD", `{"hold":"\ud800x\udc00"}`},
		{"invalid utf8 in string", "{\"hold\":\"a\xffb\xc0\"}"},
		{"invalid utf8 in key", "{\"admitted\xff\":true}"},
		{"control character in string", "{\"hold\":\"a\x01\"}"},
		{"bad escape", `{"hold":"\x"}`},
		{"leading zero", `{"refusal":{"retry_after":01}}`},
		{"big unknown number", `{"x":1e999999,"admitted":true}`},
		{"byte order mark", "\xef\xbb\xbf{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireDecodesLikeEncodingJSON(t, []byte(tt.body))
		})
	}
}

// A member name in another case is not the member: the decoder takes only
// what this project's encoders write, where encoding/json would fold.
func TestDecodeAdmitResponseMatchesMemberNamesExactly(t *testing.T) {
	for _, c := range []struct {
		body string
		want AdmitResponse
	}{
		{`{"ADMITTED":true,"Hold":"h","ReFuSaL":{"kind":3}}`, AdmitResponse{}},
		{"{\"refusal\":{\"\u212aind\":2}}", AdmitResponse{Refusal: &Refusal{}}},
		{"{\"\u017fkipped\":[\"x\"]}", AdmitResponse{}},
		{`{"admitted":true,"Levels":[{"kind":1}],"SPEND":{"checked":true}}`, AdmitResponse{Admitted: true}},
	} {
		var folded AdmitResponse
		require.NoError(t, json.Unmarshal([]byte(c.body), &folded))
		require.NotEqual(t, c.want, folded, "encoding/json folds %s", c.body)
		got, err := DecodeAdmitResponse([]byte(c.body))
		require.NoError(t, err, c.body)
		require.Equal(t, c.want, got, c.body)
	}
}

// randomResponse draws an AdmitResponse shaped like the server's answers,
// with names that exercise escaping where the protocol carries free text.
func randomResponse(rng *rand.Rand) AdmitResponse {
	names := []string{"", "global", "api_key", `q"uote`, `back\slash`, "ctl\x00\n", "é日本", "\u2028", "<html>&"}
	name := func() string { return names[rng.IntN(len(names))] }
	dim := func() limit.Dimension { return limit.Dimensions[rng.IntN(len(limit.Dimensions))] }
	period := func() limit.Period { return limit.PeriodSecond + limit.Period(rng.IntN(4)) }
	level := func() Level {
		return Level{Capacity: rng.Int64(), Remaining: rng.Int64() - rng.Int64(), ResetUnix: rng.Int64N(1 << 40)}
	}
	var r AdmitResponse
	r.Admitted = rng.IntN(2) == 0
	if rng.IntN(2) == 0 {
		r.Refusal = &Refusal{Kind: limit.Kind(rng.IntN(256)), Dimension: dim(), Budget: period(), RetryAfter: rng.Int64N(1e6) - 10,
			ExceedsCapacity: rng.IntN(2) == 0, Private: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			lv := level()
			r.Refusal.Level = &lv
		}
	}
	for range rng.IntN(4) {
		r.Levels = append(r.Levels, OpLevel{Kind: limit.Kind(rng.IntN(4)), Dimension: dim(), Budget: period(), Level: level()})
	}
	if rng.IntN(2) == 0 {
		r.Hold = strconv.FormatUint(rng.Uint64(), 16) + name()
	}
	for range rng.IntN(3) {
		r.Skipped = append(r.Skipped, name())
	}
	r.Aborted = rng.IntN(4) == 0
	return r
}

// responseFields are the member names of an answer, for upperKeys and
// the differential fuzz (where a folded name is a difference by design).
var responseFields = []string{"admitted", "aborted", "refusal", "levels", "hold", "skipped", "kind", "dimension", "budget",
	"retry_after", "exceeds_capacity", "private", "level", "capacity", "remaining", "reset_unix",
	"spend", "checked", "unavailable", "usage", "slot", "used_nano_usd", "limit_nano_usd"}

var upperKeys = func() *strings.Replacer {
	var pairs []string
	for _, k := range responseFields {
		pairs = append(pairs, `"`+k+`":`, `"`+strings.ToUpper(k)+`":`)
	}
	return strings.NewReplacer(pairs...)
}()

func TestDecodeAdmitResponseAgreesWithEncodingJSONOnServerAnswers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		want := randomResponse(rng)
		b, err := json.Marshal(want)
		require.NoError(t, err)
		requireDecodesLikeEncodingJSON(t, b)
		got, err := DecodeAdmitResponse(b)
		require.NoError(t, err)
		require.Equal(t, want, got, "response %d: %s", i, b)
		// The same answer with its member names in upper case names no
		// member at all.
		got, err = DecodeAdmitResponse([]byte(upperKeys.Replace(string(b))))
		require.NoError(t, err)
		require.Equal(t, AdmitResponse{}, got, "response %d upper-cased", i)
	}
}

func TestDecodeAdmitResponseRoundTripsEveryOutcome(t *testing.T) {
	outcomes := []limit.Outcome{
		{Result: limit.ResultAdmitted, Hold: limit.Hold{ID: "0123456789abcdef0123456789abcdef"}, Skipped: []string{"tk:a"}},
		{Result: limit.ResultRefused, Refusal: &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimModel, Budget: limit.PeriodDay, RetryAfterSec: 60, Private: true,
			Level: limit.Level{Capacity: 100, Remaining: 3, ResetUnix: 1800000000}}},
		{Result: limit.ResultRefused, Refusal: &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodMinute, RetryAfterSec: 90, ExceedsCapacity: true}},
		{Result: limit.ResultAdmitted, Levels: []limit.OpLevel{{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodSecond, Level: limit.Level{Capacity: 5, Remaining: 4, ResetUnix: 9}}}},
	}
	for _, o := range outcomes {
		b, err := json.Marshal(FromOutcome(o))
		require.NoError(t, err)
		r, err := DecodeAdmitResponse(b)
		require.NoError(t, err)
		require.Equal(t, FromOutcome(o).Outcome(), r.Outcome())
	}
}

// nestingDepth is the deepest array/object nesting of a document, so the
// differential fuzz can leave out what jsonx refuses by design.
func nestingDepth(b []byte) int {
	depth, deepest, inString := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

func FuzzDecodeAdmitResponseAgreesWithEncodingJSON(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		b, err := json.Marshal(randomResponse(rng))
		require.NoError(f, err)
		f.Add(b)
	}
	for _, s := range []string{`null`, `{"ADMITTED":true}`, `{"levels":[{"kind":1},{}],"levels":[{}]}`, `{"refusal":{"kind":256}}`,
		`{"skipped":["a",null]}`, `{"aborted":true,"Aborted":null}`,
		`{"spend":{"checked":true,"usage":[{"slot":"api_key_day","used_nano_usd":1}],"refusal":{"slot":"x"}},"Spend":{"refusal":null,"usage":[{}]}}`, `{"aborted":1}`, "{\"\u212aind\":1}", `{"\u0068old":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := jsonx.Parse(b)
		if nestingDepth(b) > jsonx.MaxDepth || v.Exists() && foldsOntoAField(v, responseFields) {
			return
		}
		requireDecodesLikeEncodingJSON(t, b)
	})
}

func BenchmarkDecodeAdmitResponse(b *testing.B) {
	body := []byte(`{"admitted":true,"levels":[{"kind":1,"dimension":"api_key","budget":"minute","level":{"capacity":60,"remaining":59,"reset_unix":1700000060}},` +
		`{"kind":3,"dimension":"api_key","budget":"day","level":{"capacity":1000000,"remaining":995000,"reset_unix":1700086400}}],"hold":"0123456789abcdef0123456789abcdef"}`)
	b.Run("jsonx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeAdmitResponse(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r AdmitResponse
			if err := json.Unmarshal(body, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// parseInt64 reads what strconv.ParseInt reads from every JSON number, short
// plain ones (jsonx.ParseInteger's direct path) and the rest alike, and
// refuses what it refuses.
func TestParseInt64ReadsWhatParseIntReads(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "7", "-7", "42", "100", "123456789012345678", "-123456789012345678",
		"1234567890123456789", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
		"-9223372036854775809", "1.0", "1e3", "-", "", "1.5e2", "99999999999999999999",
	} {
		want, err := strconv.ParseInt(s, 10, 64)
		got, ok := parseInt64([]byte(s))
		require.Equal(t, err == nil, ok, s)
		if ok {
			require.Equal(t, want, got, s)
		}
	}
}
