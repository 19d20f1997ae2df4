package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHashKeyIsLowerHexSHA256(t *testing.T) {
	for _, raw := range []string{"", "sk-test", "ключ", strings.Repeat("x", 1000)} {
		sum := sha256.Sum256([]byte(raw))
		want := hex.EncodeToString(sum[:])
		got := HashKey(raw)
		require.Equal(t, want, got)
		require.Len(t, got, 64)
		require.Equal(t, strings.ToLower(got), got)
	}
}

func TestNormalizeHashesRawKeysAndAcceptsHashForm(t *testing.T) {
	h := HashKey("sk-abc")
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "raw key is hashed", in: "sk-abc", want: h},
		{name: "hash form is taken as is", in: "sha256:" + h, want: h},
		{name: "hash form is case-insensitive and lower-cased", in: "SHA256:" + strings.ToUpper(h), want: h},
		{name: "short hash is an error", in: "sha256:abcd", wantErr: true},
		{name: "non-hex hash is an error", in: "sha256:" + strings.Repeat("g", 64), wantErr: true},
		{name: "empty key is an error", in: "", wantErr: true},
		{name: "bare prefix is an error", in: "sha256:", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Normalize(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func headersOf(m map[string]string) func(string) (string, bool) {
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

func TestAPIKeyReadsBearerAndPlainHeadersInOrder(t *testing.T) {
	order := []string{"authorization", "x-api-key"}
	tests := []struct {
		name    string
		headers map[string]string
		want    string
		ok      bool
	}{
		{name: "bearer scheme", headers: map[string]string{"authorization": "Bearer sk-1"}, want: "sk-1", ok: true},
		{name: "bearer scheme is case-insensitive and trimmed", headers: map[string]string{"authorization": "  bEaReR   sk-1  "}, want: "sk-1", ok: true},
		{name: "authorization wins over x-api-key by order", headers: map[string]string{"authorization": "Bearer a", "x-api-key": "b"}, want: "a", ok: true},
		{name: "basic scheme is skipped for the next header", headers: map[string]string{"authorization": "Basic dXNlcg==", "x-api-key": "b"}, want: "b", ok: true},
		{name: "bearer without credentials is skipped", headers: map[string]string{"authorization": "Bearer   ", "x-api-key": "b"}, want: "b", ok: true},
		{name: "bearer glued to key is not a bearer", headers: map[string]string{"authorization": "Bearersk-1"}, ok: false},
		{name: "plain header trimmed", headers: map[string]string{"x-api-key": " k "}, want: "k", ok: true},
		{name: "empty plain header is no key", headers: map[string]string{"x-api-key": "  "}, ok: false},
		{name: "no headers", headers: map[string]string{}, ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := APIKey(headersOf(tc.headers), order)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAPIKeyToleratesNilLookup(t *testing.T) {
	_, ok := APIKey(nil, []string{"x-api-key"})
	require.False(t, ok)
}

func FuzzAPIKeyNeverPanics(f *testing.F) {
	f.Add("authorization", "Bearer x")
	f.Add("x-api-key", "")
	f.Fuzz(func(t *testing.T, name, value string) {
		_, _ = APIKey(headersOf(map[string]string{name: value}), []string{"authorization", name})
		_, _ = Normalize(value)
	})
}

func TestTwoDifferentKeysInTheConfiguredHeadersConflict(t *testing.T) {
	headers := []string{"authorization", "x-api-key"}
	for _, tc := range []struct {
		h        map[string]string
		conflict bool
	}{
		{map[string]string{"authorization": "Bearer a", "x-api-key": "a"}, false},
		{map[string]string{"authorization": "Bearer junk", "x-api-key": "real"}, true},
		{map[string]string{"authorization": "Basic abc", "x-api-key": "real"}, false},
		{map[string]string{"x-api-key": "real"}, false},
		{map[string]string{"authorization": "bearer  a ", "x-api-key": " a"}, false},
		{map[string]string{}, false},
	} {
		get := func(n string) (string, bool) { v, ok := tc.h[n]; return v, ok }
		require.Equal(t, tc.conflict, KeysConflict(get, headers), "%v", tc.h)
	}
}
