package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// atFirstItem is a walk standing at the first item of the array body.
func atFirstItem(t *testing.T, body string) (walker, jsonx.StrictCursor) {
	t.Helper()
	c := jsonx.Strict([]byte(body))
	require.True(t, c.Enter(jsonx.Array))
	require.True(t, c.Next())
	return walker{body: []byte(body)}, c
}

// requireReadAsTheWalkReads holds shape to walk on the first item of the
// array body (which has one item more): the same bytes consumed, the same
// charge, and the rest of the array read after it.
func requireReadAsTheWalkReads(t *testing.T, body string, shape, walk func(*walker, *jsonx.StrictCursor)) {
	t.Helper()
	w, c := atFirstItem(t, body)
	shape(&w, &c)
	w2, c2 := atFirstItem(t, body)
	walk(&w2, &c2)
	require.Equal(t, c2.Offset(), c.Offset(), "%s: consumed", body)
	require.Equal(t, []int64{w2.total, w2.o200k, w2.images}, []int64{w.total, w.o200k, w.images}, "%s: charged", body)
	require.True(t, c.Next())
	c.Skip()
	require.False(t, c.Next())
	require.True(t, c.Valid(), body)
}

// requireLeftToTheWalk holds that shape refuses the first item of body and
// neither consumes nor charges anything.
func requireLeftToTheWalk(t *testing.T, body string, shape func(*walker, *jsonx.StrictCursor) bool) {
	t.Helper()
	w, c := atFirstItem(t, body)
	at := c.Offset()
	require.False(t, shape(&w, &c), body)
	require.Equal(t, at, c.Offset(), "%s: consumed nothing", body)
	require.Zero(t, w.total, "%s: charged nothing", body)
}

// A message spelled as clients write most of them, its role and string
// content in either order, is read by plainMessage whatever its text holds,
// and charged and consumed exactly as messageAt charges and consumes it.
// Without this test a mistake that made the shape refuse every message would
// pass every other test, the walk charging the same more slowly.
func TestAMessageAsClientsWriteItIsReadByItsShape(t *testing.T) {
	for _, content := range []string{
		``, `a`, `Hello there`,
		`The cat sat, then ran - far. Then it slept, a long internationalization of sleep. `,
		`func main() {\n\tfmt.Println(\"hello, world\")\n}\n`,
		`été, 中文 and 한국어 \u00e9\ud83d\ude00`,
		`getURL x86 HTTPServer 12345 ...`,
	} {
		for _, role := range []string{"user", "assistant", "system", "tool", "developer"} {
			for _, msg := range []string{
				`{"role":"` + role + `","content":"` + content + `"}`,
				`{"content":"` + content + `","role":"` + role + `"}`,
			} {
				// A member after the array, so that the loads near the
				// message's end have room.
				body := `[` + msg + `,{"role":"user","content":"padding for the loads"}]`
				requireReadAsTheWalkReads(t, body, func(w *walker, c *jsonx.StrictCursor) {
					require.True(t, w.plainMessage(c), msg)
				}, func(w *walker, c *jsonx.StrictCursor) {
					require.True(t, c.EnterObject())
					w.messageAt(c)
				})
			}
		}
	}
}

// Any other item is left to the walk: plainMessage consumes and charges
// nothing, whether the item is valid JSON spelled another way or not JSON.
func TestAMessageSpelledAnotherWayIsLeftToTheWalk(t *testing.T) {
	const pad = `,{"role":"user","content":"padding for the loads"}]`
	for _, msg := range []string{
		`{"role": "user","content":"hi"}`,
		`{"role":"user", "content":"hi"}`,
		`{"role":"user","content":"hi" }`,
		`{ "role":"user","content":"hi"}`,
		`{"role":"user","content":"hi","name":"bob"}`,
		`{"name":"bob","role":"user","content":"hi"}`,
		`{"content":"hi","role":"user","name":"bob"}`,
		`{"role":"function","content":"hi"}`,
		`{"role":"User","content":"hi"}`,
		`{"role":"us\u0065r","content":"hi"}`,
		`{"role":"user","content":["hi"]}`,
		`{"role":"user","content":null}`,
		`{"role":"user","Content":"hi"}`,
		`{"role":"user","content":"hi"`,
		`{"role":"user","content":"hi\q"}`,
		`{"role":"user","content":"hi` + "\n" + `"}`,
		`{"content":"hi","role":"user"`,
		`{"content":"hi","role":"user",}`,
		`{"content":"hi","role":1}`,
		`{"role":"user"}`,
		`{"content":"hi"}`,
		`{}`,
		`"a string"`,
		`[1]`,
	} {
		requireLeftToTheWalk(t, `[`+msg+pad, (*walker).plainMessage)
	}
	// Too near the body's end for the comparisons: the walk's.
	for _, body := range []string{
		`[{"role":"user"}]`, `[{"role":"user","content":`, `[{"role":"user","content":"`,
		`[{"content":"hi","role":"user"}]`, `[{"content":"hi","role":`,
	} {
		w, c := atFirstItem(t, body)
		require.False(t, w.plainMessage(&c), body)
	}
}
