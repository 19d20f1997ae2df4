package estimate

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// The members whose value decides what a request is metered as or limited
// by, spelt out here independently of the code under test.
var wantDecisive = []string{"model", "max_tokens", "max_completion_tokens", "max_output_tokens", "n", "best_of", "stream", "stream_options"}

func TestTheDecisiveMembersAreTheModelEveryCeilingTheChoicesAndTheStreamMode(t *testing.T) {
	require.Equal(t, wantDecisive, DecisiveMembers[:])
	for _, f := range CeilingFields {
		require.Contains(t, wantDecisive, f, "every ceiling field is decisive")
	}
	for i, f := range DecisiveMembers {
		got, exact := decisive([]byte(f))
		require.Equal(t, i, got, f)
		require.True(t, exact, f)
	}
	for _, f := range []string{"messages", "temperature", "model ", "", "metadata", "n_", "streams"} {
		got, exact := decisive([]byte(f))
		require.Equal(t, -1, got, f)
		require.False(t, exact, f)
	}
}

// Go's encoding/json reads a member under any case-folded spelling, so a
// backend built on it serves "MODEL" as the model: the filter reads it so
// too, and a spelling beside the plain one is a repeat.
func TestACaseFoldedSpellingOfADecisiveMemberIsThatMember(t *testing.T) {
	for spelling, want := range map[string]int{"Model": 0, "MODEL": 0, "Max_Tokens": 1, "MAX_COMPLETION_TOKENS": 2,
		"N": 4, "Best_Of": 5, "STREAM": 6, "\u017ftream": 6, "max_to\u212aens": 1, "Stream_Options": 7} {
		decoded, ok := jsonx.Unquote([]byte(`"` + spelling + `"`))
		require.True(t, ok)
		got, exact := decisive([]byte(decoded))
		require.Equal(t, want, got, spelling)
		require.False(t, exact, spelling)
		body := `{"` + wantDecisive[want] + `":1,"` + spelling + `":2,"messages":[]}`
		_, err := Parse([]byte(body), 4096)
		require.Equal(t, DuplicateFieldError{Field: wantDecisive[want]}, err, body)
	}
	r, err := Parse([]byte(`{"MODEL":"gpt-4o","MAX_TOKENS":700,"messages":[]}`), 4096)
	require.NoError(t, err)
	require.Equal(t, "gpt-4o", r.Model, "read as a case-insensitive backend reads it")
	require.Equal(t, int64(700), r.Output)
}

// escapeFirst spells name's first letter as a \u escape.
func escapeFirst(name string) string {
	const hex = "0123456789abcdef"
	c := name[0]
	return `\u00` + string(hex[c>>4]) + string(hex[c&15]) + name[1:]
}

func TestARepeatedDecisiveMemberIsADuplicateFieldErrorNamingIt(t *testing.T) {
	for _, f := range wantDecisive {
		for name, body := range map[string]string{
			"plain":          `{"` + f + `":1,"messages":[{"role":"user","content":"hi"}],"` + f + `":2}`,
			"adjacent":       `{"` + f + `":null,"` + f + `":null}`,
			"escaped second": `{"` + f + `":"a","` + escapeFirst(f) + `":"b"}`,
			"escaped first":  `{"` + escapeFirst(f) + `":true,"` + f + `":false}`,
			"both escaped":   `{"` + escapeFirst(f) + `":{},"` + escapeFirst(f) + `":[]}`,
			"three copies":   `{"` + f + `":1,"` + f + `":2,"` + f + `":3}`,
			"after junk":     `{"tools":[{"` + f + `":1}],"` + f + `":1,"temperature":0,"` + f + `":4096}`,
		} {
			_, err := Parse([]byte(body), 4096)
			require.Equal(t, DuplicateFieldError{Field: f}, err, "%s: %s", name, body)
			require.Contains(t, err.Error(), `"`+f+`"`)
		}
	}
}

func TestTheFirstRepeatedMemberIsTheOneNamed(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"stream":true,"model":"a","model":"b","stream":false}`), 1)
	require.Equal(t, DuplicateFieldError{Field: "model"}, err)
}

// Only the top-level members are compared: a repeated name inside a
// message, a tool schema or stream_options decides nothing about metering
// (and a JSON schema may legitimately say "model" at any depth).
func TestRepeatedNamesBelowTheTopLevelOrOfOtherMembersAreNoDuplicate(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"messages":[{"role":"user","model":"a","model":"b","content":"hi"}]}`,
		`{"messages":[{"role":"user","content":"hi","max_tokens":1,"max_tokens":2}]}`,
		`{"stream_options":{"include_usage":true,"include_usage":true}}`,
		`{"metadata":{"max_tokens":1,"max_tokens":2,"n":1,"n":2}}`,
		`{"tools":[{"type":"function","function":{"parameters":{"stream":1,"stream":2}}}]}`,
		`{"input":[{"role":"user","content":"x","best_of":1,"best_of":2}]}`,
		`{"response_format":{"json_schema":{"model":{},"model":{}}}}`,
		`{"temperature":1,"temperature":0,"user":"u","user":"v"}`,
		`{"messages":[],"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"a","max_tokens":1,"max_tokens ":2,"models":3}`,
		`{"model":"a","max_tokens":1,"max_completion_tokens":2,"max_output_tokens":3,"n":2,"best_of":3,"stream":true,"stream_options":{}}`,
	} {
		_, err := Parse([]byte(body), 4096)
		require.NoError(t, err, body)
	}
}

func TestAnEscapedMemberNameReadsAsItsDecodedName(t *testing.T) {
	t.Parallel()
	r, err := Parse([]byte(`{"m\u006fdel":"gpt-4o","max\u005ftokens":70,"str\u0065am":true}`), 4096)
	require.NoError(t, err)
	require.Equal(t, "gpt-4o", r.Model)
	require.Equal(t, int64(70), r.Output)
	require.True(t, r.OutputStated)
	require.True(t, r.Stream)
}

// Backends read max_tokens 0 as "no limit" (or reject it): a ceiling at or
// below zero is no ceiling, so it reserves the default, and the other
// fields still count.
func TestAZeroOrNegativeCeilingReservesLikeAnAbsentOne(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body   string
		stated bool
		want   int64
	}{
		{`{"max_tokens":0}`, false, 4096},
		{`{"max_tokens":0.0}`, false, 4096},
		{`{"max_tokens":-0}`, false, 4096},
		{`{"max_tokens":"0"}`, false, 4096},
		{`{"max_tokens":" -0 "}`, false, 4096},
		{`{"max_tokens":0e10}`, false, 4096},
		{`{"max_tokens":-1}`, false, 4096},
		{`{"max_tokens":-1e400}`, false, 4096},
		{`{"max_completion_tokens":0}`, false, 4096},
		{`{"max_output_tokens":"-5"}`, false, 4096},
		{`{"max_tokens":0,"max_completion_tokens":0,"max_output_tokens":0}`, false, 4096},
		{`{"max_tokens":0,"max_completion_tokens":50}`, true, 50},
		{`{"max_tokens":70,"max_output_tokens":-1}`, true, 70},
		{`{"max_tokens":0.0001}`, true, 1},
	} {
		r, err := Parse([]byte(tc.body), 4096)
		require.NoError(t, err, tc.body)
		require.Equal(t, tc.stated, r.OutputStated, tc.body)
		require.Equal(t, tc.want, r.Output, tc.body)
		require.Equal(t, tc.want, r.Hold()-r.Input, tc.body)
	}
}

func TestStatedCeilingIsAPositiveOutputCeiling(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]int64{`1`: 1, `"32_000"`: 32000, `0.5`: 1, `1e400`: MaxOutput} {
		n, ok := StatedCeiling(jsonx.Parse([]byte(raw)))
		require.True(t, ok, raw)
		require.Equal(t, want, n, raw)
	}
	for _, raw := range []string{`0`, `-0`, `"0"`, `0.0`, `-1`, `"-1"`, `null`, `"abc"`, `true`, strings.Repeat("9", 70)} {
		n, ok := StatedCeiling(jsonx.Parse([]byte(raw)))
		require.False(t, ok, raw)
		require.Zero(t, n, raw)
	}
}

// A Parser used body after body answers each as a fresh parse does: what
// its buffers kept from the bodies before (longer escaped strings, other
// member names) never reaches the next estimate.
func TestAReusedParserReadsEachBodyAsAFreshParse(t *testing.T) {
	t.Parallel()
	bodies := []string{
		`{"model":"gpt-4o","messages":[{"role":"user","content":"line one\nline \"two\"\n` + strings.Repeat(`\tx`, 300) + `"}],"max_tokens":20}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"short \u00e9"}]}`,
		`{"mod\u0065l":"claude-3","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"a\\b"}]}]}`,
		`{"model":"gpt-4o","messages":[`,
		`{"model":"o1","model":"o1","messages":[]}`,
		`{"input":"plain text, no escape","model":"gpt-4.1"}`,
	}
	var p Parser
	for i, b := range bodies {
		wantR, wantM, wantErr := ParseMembers([]byte(b), 4096)
		var r Request
		var m Members
		err := p.ParseInto(&r, &m, []byte(b), 4096)
		require.Equal(t, wantErr, err, "body %d", i)
		require.Equal(t, wantR, r, "body %d", i)
		require.Equal(t, wantM, m, "body %d", i)
	}
}

// decisiveFold skips a member without comparing it where the key cannot
// fold to it: shorter than it, or starting with an ASCII byte that is not
// its first letter in either case. Over keys made of the members' letters
// in both cases, the long s and the Kelvin sign, it finds what a plain
// comparison with every member finds.
func TestTheFoldedMatchSkipsOnlyMembersAKeyCannotSpell(t *testing.T) {
	plain := func(key string) int {
		for i, m := range wantDecisive {
			if strings.EqualFold(key, m) {
				return i
			}
		}
		return -1
	}
	pieces := []string{"m", "M", "o", "d", "e", "l", "L", "a", "x", "_", "t", "T", "k", "K", "\u212a", "s", "S", "\u017f",
		"r", "n", "N", "b", "f", "p", "i", "u", "c", "_tokens", "stream", "model", "\u00e9"}
	rng := rand.New(rand.NewPCG(7, 8))
	keys := append([]string{}, wantDecisive...)
	for _, m := range wantDecisive {
		keys = append(keys, strings.ToUpper(m), m[:len(m)-1], m+"s", "\u017f"+m[1:])
	}
	for range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		keys = append(keys, b.String())
	}
	matched := 0
	for _, k := range keys {
		key, ok := jsonx.Unquote([]byte(`"` + k + `"`))
		require.True(t, ok, k)
		want := plain(key)
		require.Equal(t, want, decisiveFold([]byte(key)), "%q", key)
		if want >= 0 {
			matched++
		}
	}
	require.Greater(t, matched, 2*len(wantDecisive), "the keys spell members in several ways")
}
