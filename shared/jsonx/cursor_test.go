package jsonx

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cursorDump renders the value at c by descending with Enter, the way the
// consumers walk, so it can be compared with forEachDump.
func cursorDump(c *StrictCursor, b *strings.Builder, steps *int) {
	k := c.Kind()
	if k != Object && k != Array {
		v := c.Value()
		b.WriteByte(byte('0' + v.Kind))
		b.Write(v.Raw)
		return
	}
	c.Enter(k)
	b.WriteByte('<')
	for c.Next() {
		*steps++
		if *steps > 1<<16 {
			return
		}
		if k == Object {
			b.WriteByte('k')
			b.Write(c.Key())
			b.WriteByte('=')
		}
		cursorDump(c, b, steps)
		b.WriteByte(';')
	}
	b.WriteByte('>')
}

// forEachDump renders v through ForEach, the reference the cursor replaces.
func forEachDump(v Value, b *strings.Builder) {
	if v.Kind != Object && v.Kind != Array {
		b.WriteByte(byte('0' + v.Kind))
		b.Write(v.Raw)
		return
	}
	b.WriteByte('<')
	v.ForEach(func(key []byte, val Value) bool {
		if v.Kind == Object {
			b.WriteByte('k')
			b.Write(key)
			b.WriteByte('=')
		}
		forEachDump(val, b)
		b.WriteByte(';')
		return true
	})
	b.WriteByte('>')
}

// checkCursor pins that a cursor walk sees what ForEach sees on validated
// documents and, on any bytes, ends without panicking.
func checkCursor(t *testing.T, d []byte) {
	t.Helper()
	v := Parse(d)
	if v.Exists() {
		var got, want strings.Builder
		steps := 0
		c := v.Cursor()
		cursorDump(&c, &got, &steps)
		forEachDump(v, &want)
		require.Equal(t, want.String(), got.String())
		require.False(t, c.Next(), "the walk consumed the whole value")
	}
	for _, k := range []Kind{Object, Array} {
		steps := 0
		var b strings.Builder
		c := Value{Kind: k, Raw: d}.Cursor()
		cursorDump(&c, &b, &steps)
		// A flat walk that only skips must end too.
		c = Value{Kind: k, Raw: d}.Cursor()
		c.Enter(k)
		n := 0
		for c.Next() {
			if k == Object {
				c.Key()
			}
			c.Skip()
			n++
			require.LessOrEqual(t, n, len(d)+1)
		}
	}
}

func TestCursorWalkSeesWhatForEachSees(t *testing.T) {
	docs := append([]string{
		`{"a":{"b":[1,"x\"y",{"c":null}],"d":true},"e":[],"f":{}}`,
		` [ {"k\\":"v"} , 2 , -3.5e2 , "\u00e9" , [ [ ] ] ] `,
		`{"":0,"dup":1,"dup":2}`,
		`"scalar"`, `12`, `null`,
	}, handDocs...)
	for _, d := range docs {
		t.Run(d, func(t *testing.T) { checkCursor(t, []byte(d)) })
	}
}

func TestCursorEndsOnBytesThatDidNotValidate(t *testing.T) {
	t.Parallel()
	for _, d := range []string{`[:`, `{,,,`, `{:`, `[::::]`, `{"a" 1 "b":}`, `[[[`, `{"\`, `"`, `{"a":"\"}`, `]]]`, `}`, ``} {
		t.Run(d, func(t *testing.T) { checkCursor(t, []byte(d)) })
	}
}

func FuzzCursor(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`[:`))
	f.Fuzz(checkCursor)
}

// FuzzCursorOnUnvalidatedBytesStaysInBoundsAndAdvances drives the cursor over
// arbitrary bytes, which it never sees in production (Parse runs first), to
// pin that a bug upstream of it could cost wrong counts but never a panic or
// an endless loop.
func FuzzCursorOnUnvalidatedBytesStaysInBoundsAndAdvances(f *testing.F) {
	f.Add([]byte(`{"a":[1,"b\"",{"c":null}],"d":tru`), []byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte(`}]:,"`), []byte{3, 3, 3})
	f.Fuzz(func(t *testing.T, data, ops []byte) {
		c := Value{Kind: Object, Raw: data}.Cursor()
		for _, op := range ops {
			before := c.i
			switch op % 8 {
			case 0:
				c.Enter(Object)
			case 1:
				k := c.Kind()
				if c.Enter(k) && c.Next() && k == Object {
					c.Key()
				}
			case 2:
				c.Next()
			case 3:
				c.Key()
			case 4:
				v := c.Value()
				require.Equal(t, v.Exists(), len(v.Raw) > 0)
			case 5:
				c.Skip()
			case 6:
				c.Name()
			case 7:
				if obj, ok := c.EnterItems(); ok {
					c.NextItem(obj)
				}
			}
			require.GreaterOrEqual(t, c.i, before, "the cursor never moves back")
			require.LessOrEqual(t, c.i, len(data))
		}
		// Members loops must end: each round consumes at least one byte.
		c = Value{Kind: Object, Raw: data}.Cursor()
		for rounds := 0; c.Next(); rounds++ {
			require.LessOrEqual(t, rounds, len(data))
			c.Key()
			c.Skip()
		}
	})
}

// Name reads a member's name as Members gives it: decoded, so an escaped
// spelling of a name matches the plain one.
func TestCursorNameIsTheDecodedMemberName(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string][]string{
		`{"usage":1,"choices":[]}`:     {"usage", "choices"},
		`{"us\u0061ge":1}`:             {"usage"},
		`{"a\"b":1, "" : 2}`:           {`a"b`, ""},
		`{"\ud800":1}`:                 {"\ufffd"},
		`{"x":{"nested":1},"y":[1,2]}`: {"x", "y"},
	} {
		c := Parse([]byte(doc)).Cursor()
		require.True(t, c.Enter(Object), doc)
		var got []string
		for c.Next() {
			got = append(got, c.Name())
			c.Skip()
		}
		require.Equal(t, want, got, doc)
	}
}

// EnterItems and NextItem walk an array and an object by one loop, leaving
// the cursor at each item's value.
func TestCursorItemsWalkArraysAndObjectsAlike(t *testing.T) {
	t.Parallel()
	for doc, want := range map[string][]string{
		`[1,"a",{"b":2}]`:    {`1`, `"a"`, `{"b":2}`},
		`{"k":1,"l":[true]}`: {`1`, `[true]`},
		`[]`:                 nil,
		`{}`:                 nil,
	} {
		c := Parse([]byte(doc)).Cursor()
		obj, ok := c.EnterItems()
		require.True(t, ok, doc)
		var got []string
		for c.NextItem(obj) {
			got = append(got, string(c.Value().Raw))
		}
		require.Equal(t, want, got, doc)
	}
	c := Parse([]byte(`"str"`)).Cursor()
	_, ok := c.EnterItems()
	require.False(t, ok, "a scalar has no items")
	require.False(t, c.Next(), "and is skipped whole")
}
