package estimate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/jsonx"
)

// partTexts are texts of every kind the charge tells apart.
var partTexts = []string{
	``, `a`, `Hello there`,
	`The cat sat, then ran - far. Then it slept, a long internationalization of sleep. `,
	`func main() {\n\tfmt.Println(\"hello, world\")\n}\n`,
	`été, 中文 and 한국어 \u00e9\ud83d\ude00 \ud55c\uad6d\uc5b4`,
	`getURL x86 HTTPServer 12345 ...`,
}

// A text part spelled as clients write it, its type before or after its
// text, is read by plainPart whatever its text holds, and charged and
// consumed exactly as part charges its value. Without this test a mistake
// that made the shape refuse every part would pass every other test, the
// walk charging the same more slowly.
func TestATextPartAsClientsWriteItIsReadByItsShape(t *testing.T) {
	for _, text := range partTexts {
		for _, part := range []string{
			`{"text":"` + text + `","type":"text"}`,
			`{"type":"text","text":"` + text + `"}`,
		} {
			// An item after the part, so that the loads near its end have
			// room.
			body := `[` + part + `,{"type":"text","text":"padding for the loads"}]`
			requireReadAsTheWalkReads(t, body, func(w *walker, c *jsonx.StrictCursor) {
				require.True(t, w.plainPart(c), part)
			}, func(w *walker, c *jsonx.StrictCursor) {
				w.part(w.value(c))
			})
		}
	}
}

// Any other item is left to the walk: plainPart consumes and charges
// nothing, whether the item is valid JSON spelled another way or not JSON.
func TestATextPartSpelledAnotherWayIsLeftToTheWalk(t *testing.T) {
	const pad = `,{"type":"text","text":"padding for the loads"}]`
	for _, part := range []string{
		`{"text": "hi","type":"text"}`,
		`{"text":"hi", "type":"text"}`,
		`{"text":"hi","type":"text" }`,
		`{ "type":"text","text":"hi"}`,
		`{"type":"text", "text":"hi"}`,
		`{"type":"text","text":"hi" }`,
		`{"text":"hi","type":"text","cache_control":{"type":"ephemeral"}}`,
		`{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}`,
		`{"type":"input_text","text":"hi"}`,
		`{"text":"hi","type":"input_text"}`,
		`{"type":"image","source":{"type":"url","url":"https://x"}}`,
		`{"type":"text","text":["hi"]}`,
		`{"text":1,"type":"text"}`,
		`{"type":"te\u0078t","text":"hi"}`,
		`{"Text":"hi","type":"text"}`,
		`{"text":"hi","type":"text"`,
		`{"text":"hi\q","type":"text"}`,
		`{"type":"text","text":"hi` + "\n" + `"}`,
		`{"type":"text","text":"hi"`,
		`{"text":"hi"}`,
		`{"type":"text"}`,
		`{}`,
		`"a string"`,
		`[1]`,
	} {
		requireLeftToTheWalk(t, `[`+part+pad, (*walker).plainPart)
	}
	// Too near the body's end for the comparisons: the walk's.
	for _, body := range []string{
		`[{"text":"hi"}]`, `[{"text":"hi","type":"text"`, `[{"text":"hi","type":"tex`,
		`[{"type":"text","text":"`, `[{"type":"text","text":"hi"`,
	} {
		w, c := atFirstItem(t, body)
		require.False(t, w.plainPart(&c), body)
	}
}

// A message's parts, text parts by their shape among parts of every other
// kind, are charged as content charges the array's value.
func TestAMessagesPartsAreChargedAsItsContentValueIs(t *testing.T) {
	others := []string{
		`{"type":"image_url","image_url":{"url":"https://x","detail":"low"}}`,
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}`,
		`{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"42"}]}`,
		`{"type":"text","text":"cached","cache_control":{"type":"ephemeral"}}`,
		`"a bare string"`, `7`, `null`,
	}
	var items []string
	for _, text := range partTexts {
		items = append(items, `{"text":"`+text+`","type":"text"}`, `{"type":"text","text":"`+text+`"}`)
	}
	items = append(items, others...)
	for n := range len(items) + 1 {
		parts := `[`
		for k := range n {
			if k > 0 {
				parts += `,`
			}
			parts += items[(k*5+n)%len(items)]
		}
		parts += `]`
		body := `[` + parts + `,{"type":"text","text":"padding for the loads"}]`
		requireReadAsTheWalkReads(t, body, (*walker).partsAt, func(w *walker, c *jsonx.StrictCursor) {
			w.content(w.value(c))
		})
	}
}
