package refusal

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A body the filter cannot estimate is refused in the refusals' JSON shape,
// naming what to change, and marked not to be retried.
func TestABodyTheFilterCannotEstimateIsRefusedAsJSONNotToBeRetried(t *testing.T) {
	type rendered struct {
		status int
		body   []byte
		hdrs   []Header
	}
	render := func(status int, body []byte, hdrs []Header) rendered { return rendered{status, body, hdrs} }
	for code, c := range map[string]rendered{"request_too_large": render(BodyTooLarge(1 << 20)), "invalid_json": render(NotJSON())} {
		var m struct {
			Error struct {
				Type, Code, Message string
				Param               *string
				Details             map[string]int64
			}
		}
		require.NoError(t, json.Unmarshal(c.body, &m), "%s", c.body)
		require.Equal(t, "invalid_request_error", m.Error.Type)
		require.Equal(t, code, m.Error.Code)
		require.Nil(t, m.Error.Param)
		require.NotEmpty(t, m.Error.Message)
		require.Contains(t, c.hdrs, Header{Name: "x-should-retry", Value: "false"})
		require.Contains(t, c.hdrs, Header{Name: "content-type", Value: "application/json"})
		if c.status == 413 {
			require.Contains(t, m.Error.Message, "token_budget.max_body_bytes (1048576 bytes)")
			require.Equal(t, int64(1<<20), m.Error.Details["max_body_bytes"])
		} else {
			require.Equal(t, 400, c.status)
		}
	}
}
