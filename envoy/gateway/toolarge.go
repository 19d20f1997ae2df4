package gateway

import (
	"strconv"

	"github.com/tokenbudget/tokenbudget/envoy/host"
)

// detailsRequestTooLarge is the response-code details of the host's (and Envoy's) reply to a
// request body buffered past the buffer limit.
const detailsRequestTooLarge = "request_payload_too_large"

// requestTooLarge is the gateway's 413 for a request body larger than its buffer: a JSON error
// shaped like the providers' (so an SDK shows the message) that names the limit and the flag
// raising it. Envoy answers the plain text "Payload Too Large"; the bootstraps map it to the same
// JSON with local_reply_config. Waiting does not make the body smaller: x-should-retry is false.
func requestTooLarge(limit int) *host.LocalResponse {
	n := strconv.Itoa(limit)
	body := `{"error":{"type":"invalid_request_error","code":"request_too_large","param":null,"message":` +
		`"The request body is larger than the gateway's request buffer of ` + n + ` bytes. ` +
		`Raise it with the gateway's --max-request-bytes (Envoy: per_connection_buffer_limit_bytes), ` +
		`together with the plugin's token_budget.max_body_bytes.",` +
		`"details":{"max_request_bytes":` + n + `,"flag":"--max-request-bytes"}}}`
	return &host.LocalResponse{
		Status:  413,
		Headers: host.Headers{{"content-type", "application/json"}, {"x-should-retry", "false"}},
		Body:    []byte(body),
		Details: detailsRequestTooLarge,
	}
}
