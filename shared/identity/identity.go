// Package identity finds the caller's API key in request headers and hashes
// it, so nothing downstream ever holds or logs the raw key.
//
// This package is compiled into the .wasm: no fmt, no os, and nothing that
// links syscall (so no crypto/sha256 or encoding/hex; see sha256.go).
package identity

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// HashPrefix marks a config key that is already a SHA-256 hash.
const HashPrefix = "sha256:"

// HashKey is the lower-case hex SHA-256 of a raw key: the only form in which
// a key is stored, compared, used in bucket keys or logged.
func HashKey(raw string) string {
	return hexLower(sum256(raw))
}

var (
	errEmptyKey = errors.New("key is empty")
	errBadHash  = errors.New("sha256: form needs exactly 64 hex digits")
)

// Normalize turns a key as written in the config into its hash: a
// "sha256:<64 hex>" key (any case) is taken as the hash itself, anything
// else is a raw key and is hashed. A key that starts with "sha256:" is
// always read as a hash, so a malformed one is an error rather than a
// silently hashed raw string.
func Normalize(configKey string) (string, error) {
	if configKey == "" {
		return "", errEmptyKey
	}
	if len(configKey) >= len(HashPrefix) && strings.EqualFold(configKey[:len(HashPrefix)], HashPrefix) {
		h := configKey[len(HashPrefix):]
		if len(h) != sha256Size*2 {
			return "", errBadHash
		}
		for i := 0; i < len(h); i++ {
			if !isHex(h[i]) {
				return "", errBadHash
			}
		}
		return strings.ToLower(h), nil
	}
	return HashKey(configKey), nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// Lookup finds the caller's API key among the request's header pairs (every
// entry, in order, names lower-case as Envoy presents them) and reports a
// conflict when the configured key headers carry more than one key value:
//
//   - a configured header present more than once (Envoy keeps repeated
//     non-inline headers such as x-api-key as separate entries, while its
//     header lookup returns only the first);
//   - a value holding a comma (Envoy joins a repeated inline header such as
//     authorization into one comma-separated value): "Bearer a,Bearer a",
//     "Bearer a, junk" and "Bearer a,b" all carry more than one value;
//   - two configured headers with different keys (OpenAI-style backends read
//     Authorization, Anthropic-style x-api-key).
//
// Which copy a backend authenticates with is the backend's choice, so a
// caller could be metered under one value while served under another; such
// a request is refused rather than guessed. raw is the first key found in
// header order: "authorization" yields the credentials of a "Bearer <key>"
// value (scheme case-insensitive, surrounding space trimmed) and is skipped
// for other schemes; any other header yields its trimmed value.
func Lookup(pairs [][2]string, headers []string) (raw string, ok, conflict bool) {
	for _, name := range headers {
		v, entries := entry(pairs, name)
		if entries == 0 {
			continue
		}
		if entries > 1 || strings.IndexByte(v, ',') >= 0 {
			return raw, ok, true
		}
		k, found := keyIn(name, v)
		if !found {
			continue
		}
		if !ok {
			raw, ok = k, true
			continue
		}
		if k != raw {
			return raw, true, true
		}
	}
	return raw, ok, false
}

// entry returns the first value of header name among pairs and how many
// entries it has.
func entry(pairs [][2]string, name string) (first string, n int) {
	for i := range pairs {
		if firstBytesDiffer(pairs[i][0], name) || !strings.EqualFold(pairs[i][0], name) {
			continue
		}
		if n == 0 {
			first = pairs[i][1]
		}
		n++
	}
	return first, n
}

// keyIn reads the key one header carries: Authorization only with the
// Bearer scheme, any other header as its trimmed value.
func keyIn(name, v string) (string, bool) {
	if !firstBytesDiffer(name, "authorization") && strings.EqualFold(name, "authorization") {
		v = trimSpace(v)
		const scheme = "bearer"
		if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) || (v[len(scheme)] != ' ' && v[len(scheme)] != '\t') {
			return "", false
		}
		v = v[len(scheme)+1:]
	}
	v = trimSpace(v)
	return v, v != ""
}

// trimSpace is strings.TrimSpace with its common case in line: a value that
// starts and ends with a printable ASCII byte has no space to trim (every
// ASCII space is at most ' ', and a multi-byte rune's bytes are all at
// least utf8.RuneSelf). In the VM the call alone costs more than the test.
func trimSpace(s string) string {
	if len(s) > 0 && s[0]-(' '+1) < utf8.RuneSelf-(' '+1) && s[len(s)-1]-(' '+1) < utf8.RuneSelf-(' '+1) {
		return s
	}
	return strings.TrimSpace(s)
}
