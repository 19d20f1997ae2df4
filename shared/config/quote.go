package config

import "github.com/tokenbudget/tokenbudget/shared/jsonx"

// appendQuoted appends s as a JSON string exactly as encoding/json's Marshal
// spells it (HTML-escaped <, > and &; invalid UTF-8 as \ufffd; U+2028 and
// U+2029 escaped), so error paths naming odd map keys read as they did when
// Parse used encoding/json.
func appendQuoted(dst []byte, s string) []byte {
	return jsonx.AppendStringWith(dst, s, jsonx.LikeMarshal)
}
