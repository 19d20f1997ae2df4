package estimate

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// A message's string content is read once (rawText): words runs over its JSON
// text in the body and the validator checks only what words did not pass. The
// estimate and the verdict must be what the validator then the Value walk give,
// at every byte that stops words: the closing quote (also where a letter
// follows it, which words must not take for a lone punctuation character), a
// backslash, a control byte, and the shapes words hands back to scan. Each
// content sits before more members, so that words' fast loop, which needs 25
// bytes of room, runs up to the stop.
func TestAMessageTextReadOnceIsChargedAndCheckedAsBefore(t *testing.T) {
	const tail = `,"role":"user","name":"a name long enough for the fast loop"}]}`
	for _, tc := range []struct {
		name    string
		content string // the JSON text between the quotes
		valid   bool
	}{
		{"prose", `The cat sat, then ran - far. Then it slept`, true},
		{"a space before the end", `the cat sat `, true},
		{"punctuation before the end", `the cat sat.`, true},
		{"punctuation and a space before the end", `the cat sat. `, true},
		{"a quote then a letter ends the string", `the cat"sat on the mat`, false},
		{"a quote, a space, a letter ends the string", `the cat" sat on the mat`, false},
		{"an escaped quote then a letter", `the cat\"sat on the mat`, true},
		{"an escape after a word", `the cat\nsat on the mat`, true},
		{"an escape after prose", `the cat sat on the mat, then ran\u0041way`, true},
		{"a bad escape after a word", `the cat\qsat on the mat`, false},
		{"a raw control byte after a word", "the cat\x01sat on the mat", false},
		{"a raw tab after a word", "the cat\tsat on the mat", false},
		{"a raw newline after a space", "the cat \nsat on the mat", false},
		{"DEL is plain", "the cat\x7fsat on the mat", true},
		{"a long word", `internationalization of the whole mat`, true},
		{"capitals and digits in a word", `the getURL x86 cat HTTPServer mat`, true},
		{"starts with a digit", `42 cats on the mat`, true},
		{"starts with a non-ASCII letter", `été on the mat`, true},
		{"ends on a non-ASCII letter", `the mat été`, true},
		{"empty", ``, true},
		{"one letter", `a`, true},
	} {
		body := []byte(`{"messages":[{"content":"` + tc.content + `"` + tail)
		require.Equal(t, tc.valid, jsonx.Parse(body).Kind != jsonx.Invalid, "%s: the case's premise", tc.name)
		requireReadAsTheValueWalk(t, messagesOf(body), messageReaders)
		_, err := Parse(body, 4096)
		if tc.valid {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, ErrNotJSON, tc.name)
		}
	}
	for _, body := range []string{
		`{"messages":[{"content":"the cat sat on the mat and then`, // the body ends inside the text
		`{"messages":[{"content":"the cat"`,
		`{"messages":[{"content":"the cat sat on the mat and then"`,
	} {
		_, err := Parse([]byte(body), 4096)
		require.ErrorIs(t, err, ErrNotJSON, body)
	}
}

// A message's role among the common ones (knownRole) is charged what member
// charges it, from a table, and checked from its closing quote; anything
// else, even one letter off or too near the body's end for the comparison,
// takes member's path. The estimate is the Value walk's either way.
func TestAKnownRoleIsChargedAsMemberChargesIt(t *testing.T) {
	const tail = `,"content":"a text long enough for the comparison"}]}`
	for _, tc := range []struct {
		name  string
		role  string // the JSON text of the value
		valid bool
	}{
		{"user", `"user"`, true},
		{"assistant", `"assistant"`, true},
		{"system", `"system"`, true},
		{"tool", `"tool"`, true},
		{"developer", `"developer"`, true},
		{"a longer value", `"users"`, true},
		{"a shorter value", `"use"`, true},
		{"another case", `"User"`, true},
		{"an escape after the letters", `"user\n"`, true},
		{"an escaped letter", `"us\u0065r"`, true},
		{"a role no message names", `"critic"`, true},
		{"a role then a second quote", `"user""`, false},
		{"a role then a letter", `"user"x`, false},
	} {
		body := []byte(`{"messages":[{"role":` + tc.role + tail)
		require.Equal(t, tc.valid, jsonx.Parse(body).Kind != jsonx.Invalid, "%s: the case's premise", tc.name)
		requireReadAsTheValueWalk(t, messagesOf(body), messageReaders)
	}
	for _, body := range []string{
		`{"messages":[{"role":"user"}]}`, // too near the end for the comparison
		`{"messages":[{"role":"user"`,
		`{"messages":[{"role":"user","role":"assistant","role":"system","content":"x"},{"role":"tool","x":1}]}`,
	} {
		requireReadAsTheValueWalk(t, messagesOf([]byte(body)), messageReaders)
	}
}

// messagesOf is the messages array of a body that starts with it, and what
// follows the array but its closing brace.
func messagesOf(body []byte) string {
	s := strings.TrimPrefix(string(body), `{"messages":`)
	return strings.TrimSuffix(s, "}")
}
