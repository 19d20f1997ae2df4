package refusal

import "github.com/tokenbudget/tokenbudget/shared/jsonx"

// appendJSONString appends s as a JSON string literal. Dimension names and
// budgets are ours, but a message may one day carry a model name the client
// chose, so every byte is escaped as JSON requires (quotes, backslashes,
// control characters, invalid UTF-8 as U+FFFD, U+2028/U+2029 so the body
// is also safe inside JavaScript), and DEL too: a refusal is read in
// terminals and logs.
func appendJSONString(dst []byte, s string) []byte {
	return jsonx.AppendStringWith(dst, s, jsonx.EscapeDEL)
}
