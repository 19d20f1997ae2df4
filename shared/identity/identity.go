// Package identity finds the caller's API key in request headers and hashes
// it, so nothing downstream ever holds or logs the raw key.
//
// This package is compiled into the .wasm: no fmt, no os, and nothing that
// links syscall (so no crypto/sha256 or encoding/hex; see sha256.go).
package identity

import (
	"errors"
	"strings"
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

// APIKey returns the raw key from the first of headers that carries one.
// "authorization" yields the credentials of a "Bearer <key>" value (scheme
// case-insensitive, surrounding space trimmed) and is skipped for other
// schemes; any other header yields its trimmed value. get is the host's
// header lookup (names are lower-case, as Envoy presents them).
func APIKey(get func(name string) (string, bool), headers []string) (raw string, ok bool) {
	raw, ok, _ = Lookup(get, headers)
	return raw, ok
}

// KeysConflict reports a request whose configured key headers carry two
// different keys. Which one the backend authenticates with depends on the
// backend (OpenAI-style reads Authorization, Anthropic-style x-api-key), so
// a caller could be metered under a throwaway key while served under its
// real one; such a request is refused rather than guessed.
func KeysConflict(get func(name string) (string, bool), headers []string) bool {
	_, _, conflict := Lookup(get, headers)
	return conflict
}

// Lookup is APIKey and KeysConflict in one pass, asking get for each
// header once: the first key found, and whether another configured header
// carries a different one.
func Lookup(get func(name string) (string, bool), headers []string) (raw string, ok, conflict bool) {
	if get == nil {
		return "", false, false
	}
	for _, name := range headers {
		v, found := keyIn(get, name)
		if !found {
			continue
		}
		if !ok {
			raw, ok = v, true
			continue
		}
		if v != raw {
			return raw, true, true
		}
	}
	return raw, ok, false
}

// keyIn reads the key one header carries: Authorization only with the
// Bearer scheme, any other header as its trimmed value.
func keyIn(get func(name string) (string, bool), name string) (string, bool) {
	v, found := get(name)
	if !found {
		return "", false
	}
	if strings.EqualFold(name, "authorization") {
		v = strings.TrimSpace(v)
		const scheme = "bearer"
		if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) || (v[len(scheme)] != ' ' && v[len(scheme)] != '\t') {
			return "", false
		}
		v = v[len(scheme)+1:]
	}
	v = strings.TrimSpace(v)
	return v, v != ""
}
