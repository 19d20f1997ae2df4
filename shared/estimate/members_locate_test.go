package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// checkMembers pins that ParseMembers locates each decisive member where
// an exact-name lookup finds it, and the place a new member goes where
// SetMember puts one: a rewrite from these locations edits what a lookup
// would have edited.
func checkMembers(t *testing.T, body []byte) {
	_, m, err := ParseMembers(body, 0)
	if err != nil {
		return
	}
	doc := jsonx.Parse(body)
	for _, name := range DecisiveMembers {
		s, ok := m.Exact(name)
		v := doc.Get(name)
		require.Equal(t, v.Exists(), ok, "%s in %s", name, body)
		if ok {
			require.Equal(t, string(v.Raw), string(body[s.Start:s.End]), "%s in %s", name, body)
		}
	}
	const added = `"zz\u0000":1`
	want, ok := jsonx.SetMember(body, "zz\x00", []byte("1"))
	require.True(t, ok)
	sep := ","
	if m.Empty {
		sep = ""
	}
	got := string(body[:m.Append]) + sep + added + string(body[m.Append:])
	require.Equal(t, string(want), got, "%s", body)
}

func TestParseMembersLocatesWhatALookupFinds(t *testing.T) {
	for _, b := range []string{
		`{"model":"m","stream":true,"max_tokens":5,"messages":[{"role":"user","content":"x"}]}`,
		` { "MODEL" : "m" , "max\u005ftokens" : 1e3 , "messages" : [ ] } `,
		`{}`, ` {  } `, `{"messages":[]}`, "{\n\"stream_options\": null\n}\n",
	} {
		checkMembers(t, []byte(b))
	}
}

func FuzzParseMembersLocatesWhatALookupFinds(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"max_tokens":5,"messages":[]}`))
	f.Add([]byte(` {"Stream":1 , "n":2} `))
	f.Fuzz(checkMembers)
}
