package exchange

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// Whatever the body and the answer, an exchange never panics and its hold
// ends exactly once: settled or released, never both, never twice.
func FuzzAHoldEndsExactlyOnce(f *testing.F) {
	f.Add([]byte(hiBody), []byte(chunkHi+chunkUsage+chunkDone), true, uint8(0))
	f.Add([]byte(`{"stream":true,"messages":[]}`), []byte(chunkUsage), true, uint8(3))
	f.Add([]byte(`not json`), []byte(`{"usage":{"prompt_tokens":1,"completion_tokens":1}}`), false, uint8(1))
	f.Fuzz(func(t *testing.T, body, answer []byte, streamed bool, cut uint8) {
		r := newRig(t, withConfig(`"models":{"m":{"max_tokens_per_request":50,"on_max_tokens":"clamp"}},"token_budget":{"on_unreadable_body":"admit"}`))
		req := chat(string(body))
		r.send(req)
		held := 0
		if r.x.Phase() == PhaseAdmitting {
			held = len(r.plan().HoldEntries())
			r.admitAll(false)
		}
		headers := jsonOK()
		if streamed {
			headers = sseOK()
		}
		resp := &response{headers: headers}
		ends := 0
		count := func() {
			for _, e := range r.x.Drain() {
				if e.Kind == Settle || e.Kind == Release {
					ends++
				}
				if e.Kind == RecordDecision {
					require.True(t, gjson.ValidBytes(e.Body) && gjson.ParseBytes(e.Body).IsObject(),
						"the decision is a JSON object: %s", e.Body)
				}
			}
		}
		count()
		if cut%4 != 0 {
			r.x.ResponseHeaders(resp, false, nil)
			for i := 0; i < len(answer); i += int(cut) + 1 {
				resp.chunk = answer[i:min(len(answer), i+int(cut)+1)]
				r.x.ResponseBody(resp, len(resp.chunk), cut%4 == 3 && i+int(cut)+1 >= len(answer))
			}
		}
		r.x.Log()
		r.x.Done()
		count()
		if held > 0 {
			require.Equal(t, 1, ends, "an admitted hold ends once")
		} else {
			require.Zero(t, ends)
		}
	})
}
