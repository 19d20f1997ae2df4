package jsonx

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// walker is what a walk needs of a Cursor or a StrictCursor.
type walker interface {
	Kind() Kind
	Enter(Kind) bool
	Next() bool
	Name() string
	Value() Value
	EnterItems() (object, ok bool)
	NextItem(object bool) bool
}

// walk enters containers down to enterDepth and consumes the rest whole
// (names with Name in objects entered by Enter, Key in those entered by
// EnterItems), and returns what it read.
func walk(c walker, enterDepth int) []string {
	var seen []string
	var at func(depth int)
	at = func(depth int) {
		if depth >= enterDepth {
			seen = append(seen, string(c.Value().Raw))
			return
		}
		switch k := c.Kind(); {
		case k == Object && depth%2 == 0:
			if c.Enter(Object) {
				for c.Next() {
					seen = append(seen, "name:"+c.Name())
					at(depth + 1)
				}
			}
		case k == Object || k == Array:
			obj, ok := c.EnterItems()
			for ok && c.NextItem(obj) {
				at(depth + 1)
			}
		default:
			seen = append(seen, string(c.Value().Raw))
		}
	}
	at(0)
	return seen
}

// strictWalk is walk with a strict cursor over data, and whether data was
// Valid.
// valueWalk is walk over a parsed value's own accessors (ForEach), the
// reader the cursor's walk is held to.
func valueWalk(v Value, enterDepth int) []string {
	var seen []string
	var at func(v Value, depth int)
	at = func(v Value, depth int) {
		if depth >= enterDepth || (v.Kind != Object && v.Kind != Array) {
			seen = append(seen, string(v.Raw))
			return
		}
		v.ForEach(func(k []byte, f Value) bool {
			if v.Kind == Object && depth%2 == 0 {
				name, _ := Unquote([]byte(`"` + string(k) + `"`))
				seen = append(seen, "name:"+name)
			}
			at(f, depth+1)
			return true
		})
	}
	at(v, 0)
	return seen
}

func strictWalk(data []byte, enterDepth int) ([]string, bool) {
	c := Strict(data)
	seen := walk(&c, enterDepth)
	return seen, c.Valid()
}

// A strict walk accepts exactly what Parse accepts, whatever it enters, and
// on a valid document reads what the parsed value's ForEach reads.
func TestAStrictWalkIsValidExactlyWhenParseAccepts(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{}`, `[]`, ` {"a":1} `, `{"a":[1,{"b":"c"}],"d":null}`, `"x"`, `12`, `true`,
		`{"a":1,}`, `{"a":1 "b":2}`, `{"a":}`, `{"a"}`, `{,"a":1}`, `[1,]`, `[,1]`, `[1 2]`, `[1}`, `{"a":1]`,
		`{"a":1}x`, `{"a":1}{}`, `{"a":"\u00zz"}`, "{\"a\":\"\x01\"}", `{"a":01}`, `{"a":tru}`, `{"a":[1`,
		`{"a":1`, `{`, ``, ` `, `{"\ud800":1}`, `{"k\"":[[[]]]}`,
		// the fused steps (NextMember, EnterObject) on arrays of objects
		`[{"a":1},{"b":[{}]}]`, ` [ {"a" : 1 } , 2 ,{ "b" :"c"} ] `, `[{"a":1},]`, `[{"a":1}{"b":2}]`, `[,{}]`,
		`[{"a" 1}]`, `[{"a":1,}]`, `[{,}]`, `[{"a":1}`, `[{"a"`, `[{"a":1]`, `[{"a":1}}`, `{"a":{"b":1},}`,
		`[{"a\u0062":[{"\"":2}]}]`, `[{1:2}]`, `[{"a":1 "b":2}]`,
	} {
		want := Parse([]byte(doc)).Kind != Invalid
		for depth := 0; depth <= 4; depth++ {
			seen, ok := strictWalk([]byte(doc), depth)
			require.Equal(t, want, ok, "%q entered %d deep", doc, depth)
			fused, fok := fusedWalk([]byte(doc), depth)
			require.Equal(t, want, fok, "%q entered %d deep, fused steps", doc, depth)
			if want {
				require.Equal(t, seen, fused, "%q entered %d deep, fused steps", doc, depth)
				require.Equal(t, valueWalk(Parse([]byte(doc)), depth), seen, "%q entered %d deep", doc, depth)
			}
		}
	}
}

func FuzzStrictCursorAgreesWithParse(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"choices":[{"delta":{"content":"hi"}}],"usage":null}`))
	f.Add([]byte(`{"a":[1,]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v := Parse(data)
		for depth := 0; depth <= 4; depth++ {
			seen, ok := strictWalk(data, depth)
			require.Equal(t, v.Kind != Invalid, ok, "entered %d deep", depth)
			fused, fok := fusedWalk(data, depth)
			require.Equal(t, v.Kind != Invalid, fok, "entered %d deep, fused steps", depth)
			if ok {
				require.Equal(t, seen, fused, "entered %d deep, fused steps", depth)
			}
			if ok && depth == 4 {
				require.Equal(t, valueWalk(v, depth), seen)
			}
		}
	})
}

// Escaped answers for the last name (Key) or value (Value, Skip) read, so a
// caller decodes only what holds an escape.
func TestStrictCursorEscapedTellsWhetherTheLastNameOrValueHoldsAnEscape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc                 string
		keyEscaped, escaped bool
	}{
		{`{"a":"b"}`, false, false},
		{`{"a\n":"b"}`, true, false},
		{`{"a":"b\u0041"}`, false, true},
		{`{"\"a":"\\"}`, true, true},
		{`{"a\/":1}`, true, false},
		{`{"a":[1,"\t"]}`, false, false}, // an array is not a string
	} {
		c := Strict([]byte(tc.doc))
		require.True(t, c.Enter(Object), tc.doc)
		require.True(t, c.Next(), tc.doc)
		c.Key()
		require.Equal(t, tc.keyEscaped, c.Escaped(), "after Key: %s", tc.doc)
		c.Value()
		require.Equal(t, tc.escaped, c.Escaped(), "after Value: %s", tc.doc)
	}
}

// StringAfter checks a string from where its caller stopped reading plain
// bytes: from right after the quote it is Value, from further on it reads
// only the rest, and it refuses what is not a string or a checked position
// outside the string's start.
func TestStrictCursorStringAfterChecksTheRestOfTheString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		doc      string
		checked  int // an offset into doc
		raw      string
		escaped  bool
		validDoc bool
	}{
		{"right after the quote it is Value", `["ab c"]`, 2, `"ab c"`, false, true},
		{"from the middle", `["ab c"]`, 4, `"ab c"`, false, true},
		{"at the closing quote", `["ab c"]`, 6, `"ab c"`, false, true},
		{"an escape after checked", `["ab\n"]`, 3, `"ab\n"`, true, true},
		{"a control byte after checked", "[\"ab\x01\"]", 3, ``, false, false},
		{"an unclosed string", `["ab`, 3, ``, false, false},
		{"checked at the quote itself", `["ab"]`, 1, ``, false, false},
		{"checked past the document", `["ab"]`, 7, ``, false, false},
		{"not a string", `[12]`, 2, ``, false, false},
	} {
		c := Strict([]byte(tc.doc))
		require.True(t, c.Enter(Array), tc.name)
		require.True(t, c.Next(), tc.name)
		require.Equal(t, kindOf(tc.doc[1]), c.Kind(), tc.name)
		v := c.StringAfter(tc.checked)
		require.Equal(t, tc.raw, string(v.Raw), tc.name)
		require.Equal(t, tc.escaped, c.Escaped(), tc.name)
		for c.Next() {
			c.Skip()
		}
		require.Equal(t, tc.validDoc, c.Valid(), tc.name)
		if tc.validDoc {
			require.Equal(t, String, v.Kind, tc.name)
		}
	}
}

func TestStrictCursorTookConsumesWhatTheCallerRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		doc      string
		enter    bool // Took the array's first item rather than the document
		rest     string
		n, depth int
		took     bool
		validDoc bool
	}{
		{"an item", `[ {"a":[1]} ,2]`, true, `{"a":[1]} ,2]`, 9, 2, true, true},
		{"the whole document", ` {"a":1} `, false, `{"a":1} `, 7, 1, true, true},
		{"short of the value", `[{"a":1}]`, true, `{"a":1}]`, 3, 1, true, false},
		{"past the document", `[{"a":1}]`, true, `{"a":1}]`, 9, 1, false, false},
		{"nothing", `[1]`, true, `1]`, 0, 0, false, false},
		{"deeper than MaxDepth", `[1]`, true, `1]`, 1, MaxDepth, false, false},
	} {
		c := Strict([]byte(tc.doc))
		if tc.enter {
			require.True(t, c.Enter(Array), tc.name)
			require.True(t, c.Next(), tc.name)
		}
		require.Equal(t, tc.rest, string(c.Rest()), tc.name)
		require.Equal(t, tc.took, c.Took(tc.n, tc.depth), tc.name)
		for tc.enter && c.Next() {
			c.Skip()
		}
		require.Equal(t, tc.validDoc, c.Valid(), tc.name)
	}
	c := Strict([]byte(`{"a":1}`))
	require.True(t, c.Enter(Object))
	require.False(t, c.Took(1, 0), "no value may come before the member's name")
	require.False(t, c.Valid())
}

// fusedWalk is strictWalk with the fused steps: objects' members read with
// NextMember, and arrays whose items are entered with EnterObject after Next
// (an object item entered there, any other item read as walk reads it). It
// records what walk records, so the two agree on every document.
func fusedWalk(data []byte, enterDepth int) ([]string, bool) {
	c := Strict(data)
	var seen []string
	var at func(depth int)
	var members func(depth int) // the object at depth, entered
	members = func(depth int) {
		for {
			k, ok := c.NextMember()
			if !ok {
				return
			}
			if depth%2 == 0 {
				name := string(k)
				if c.Escaped() {
					name, _ = Unquote([]byte(`"` + string(k) + `"`))
				}
				seen = append(seen, "name:"+name)
			}
			at(depth + 1)
		}
	}
	at = func(depth int) {
		if depth >= enterDepth {
			seen = append(seen, string(c.Value().Raw))
			return
		}
		switch c.Kind() {
		case Object:
			if c.EnterObject() {
				members(depth)
			}
		case Array:
			c.Enter(Array)
			if depth+1 >= enterDepth { // items read whole
				for c.Next() {
					at(depth + 1)
				}
				return
			}
			for c.Next() {
				if c.EnterObject() {
					members(depth + 1)
					continue
				}
				at(depth + 1)
			}
		default:
			seen = append(seen, string(c.Value().Raw))
		}
	}
	at(0)
	return seen, c.Valid()
}

// A name or string value is read in line when its closing quote comes
// within nine bytes and nothing before it needs a closer look: at every
// length around that, with an escape, a control byte or a quote first, and
// with the document ending right after, a strict walk reads what Parse and
// a Cursor read, and Escaped tells the escape.
func TestShortStringsAreReadAsParseReadsThem(t *testing.T) {
	t.Parallel()
	for n := 0; n <= 12; n++ {
		for _, fill := range []string{"a", `\n`, `\"`, "\x01", `\u00e9`, "é"} {
			text := ""
			for len(text) < n {
				text += "a"
			}
			for at := 0; at <= n; at++ {
				str := `"` + text[:at] + fill + text[at:] + `"`
				pair := `{` + str + `:` + str + `}`
				for _, doc := range []string{pair, `[` + str + `]`, str, `{` + str + `:1,"b":` + str + `}`} {
					v := Parse([]byte(doc))
					for depth := 0; depth <= 2; depth++ {
						seen, ok := strictWalk([]byte(doc), depth)
						require.Equal(t, v.Kind != Invalid, ok, "%q entered %d deep", doc, depth)
						fused, fok := fusedWalk([]byte(doc), depth)
						require.Equal(t, v.Kind != Invalid, fok, "%q entered %d deep, fused", doc, depth)
						if ok {
							require.Equal(t, valueWalk(v, depth), seen, "%q entered %d deep", doc, depth)
							require.Equal(t, seen, fused, "%q entered %d deep, fused", doc, depth)
						}
					}
					if doc == pair && v.Kind == Object {
						c := Strict([]byte(doc))
						c.Enter(Object)
						_, _ = c.NextMember()
						require.Equal(t, strings.Contains(str, `\`), c.Escaped(), "%q: the name's escape", doc)
						c.Skip()
						require.Equal(t, strings.Contains(str, `\`), c.Escaped(), "%q: the value's escape", doc)
					}
				}
			}
		}
	}
}
