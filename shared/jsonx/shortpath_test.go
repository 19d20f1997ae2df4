package jsonx

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// The validator reads a short key before its colon, and a short plain
// integer, in line (shortString, shortInteger); everything else goes the
// long way. Each document here sits on an edge of those short paths, and
// must be judged as encoding/json judges it.
func TestTheShortPathsJudgeAsEncodingJSONDoes(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"a":1}`, `{"ab":"cd","ef":"gh","ij":"kl"}`, `{"a" :1}`, `{"a": 1}`, `{ "a":1}`, `{"a":1, "b":2}`,
		`{"a":1,"b"}`, `{"a":1,"b":}`, `{"a":1,b:2}`, `{"a":1,"b" 2}`, `{"abcdefgh":1}`, `{"abcdefghi":1}`,
		`{"a\"b":1}`, `{"a\nb":1}`, "{\"a\x01\":1}", `{"a":1,"":2}`, `{"a":1,b":2}`, `{x":1}`, `{"a":1,xy":2}`,
		`[1234567,1]`, `[12345678,1]`, `[1234567]`, `[0,1]`, `[01,1]`, `[00]`, `[0.5,1]`, `[10.5,1]`,
		`[1e5,1]`, `[1E5,1]`, `[1234567e1]`, `[1234567.5]`, `[-1,1]`, `[1-1,1]`, `[1 ,1]`, `[1x,1]`,
		`[1,2,3,4,5,6,7,8]`, `{"n":1234567,"m":7654321}`, `{"n":0000000}`, `[1234567`, `{"a":12`,
	} {
		t.Run(doc, func(t *testing.T) {
			require.Equal(t, json.Valid([]byte(doc)), Valid([]byte(doc)))
			// The same document with room after it for the eight-byte loads.
			padded := []byte(doc + "        ")
			require.Equal(t, json.Valid(padded), Valid(padded))
		})
	}
}
