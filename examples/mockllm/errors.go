package mockllm

import (
	"net/http"
	"strconv"
)

// writeError answers status with the error body the API family uses, so SDKs surface it as their
// typed API error; it returns status for the Served record.
func writeError(w http.ResponseWriter, kind api, status int, msg string) int {
	if status == http.StatusTooManyRequests || status == 529 {
		w.Header().Set("Retry-After", "1")
	}
	if kind == apiAnthropic {
		writeJSON(w, status, map[string]any{
			"type":  "error",
			"error": map[string]any{"type": anthropicErrorType(status), "message": msg},
		})
		return status
	}
	typ, code := openAIErrorType(status)
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code},
	})
	return status
}

func anthropicErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func openAIErrorType(status int) (string, any) {
	switch {
	case status == 401:
		return "invalid_request_error", "invalid_api_key"
	case status == 404:
		return "invalid_request_error", "not_found"
	case status == 429:
		return "rate_limit_exceeded", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", nil
	}
	return "invalid_request_error", "mock_" + strconv.Itoa(status)
}
