package identity

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHashKeyIsLowerHexSHA256(t *testing.T) {
	t.Parallel()
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

func TestAPIKeyReadsBearerAndPlainHeadersInOrder(t *testing.T) {
	t.Parallel()
	order := []string{"authorization", "x-api-key"}
	tests := []struct {
		name    string
		headers [][2]string
		want    string
		ok      bool
	}{
		{name: "bearer scheme", headers: [][2]string{{"authorization", "Bearer sk-1"}}, want: "sk-1", ok: true},
		{name: "bearer scheme is case-insensitive and trimmed", headers: [][2]string{{"authorization", "  bEaReR   sk-1  "}}, want: "sk-1", ok: true},
		{name: "authorization wins over x-api-key by order", headers: [][2]string{{"x-api-key", "a"}, {"authorization", "Bearer a"}}, want: "a", ok: true},
		{name: "basic scheme is skipped for the next header", headers: [][2]string{{"authorization", "Basic dXNlcg=="}, {"x-api-key", "b"}}, want: "b", ok: true},
		{name: "bearer without credentials is skipped", headers: [][2]string{{"authorization", "Bearer   "}, {"x-api-key", "b"}}, want: "b", ok: true},
		{name: "bearer glued to key is not a bearer", headers: [][2]string{{"authorization", "Bearersk-1"}}, ok: false},
		{name: "plain header trimmed", headers: [][2]string{{"x-api-key", " k "}}, want: "k", ok: true},
		{name: "empty plain header is no key", headers: [][2]string{{"x-api-key", "  "}}, ok: false},
		{name: "other headers are not keys", headers: [][2]string{{"x-other", "k"}, {":path", "/v1/chat/completions"}}, ok: false},
		{name: "no headers", ok: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, conflict := Lookup(tc.headers, order)
			require.False(t, conflict)
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.want, got)
		})
	}
}

func FuzzAPIKeyNeverPanics(f *testing.F) {
	f.Add("authorization", "Bearer x", "x-api-key", "y")
	f.Add("x-api-key", "", "x-api-key", "")
	f.Fuzz(func(t *testing.T, n1, v1, n2, v2 string) {
		_, _, _ = Lookup([][2]string{{n1, v1}, {n2, v2}}, []string{"authorization", n1})
		_, _ = Normalize(v1)
	})
}

func TestMoreThanOneKeyValueInTheConfiguredHeadersConflicts(t *testing.T) {
	t.Parallel()
	headers := []string{"authorization", "x-api-key"}
	for _, tc := range []struct {
		name     string
		h        [][2]string
		conflict bool
	}{
		{"the same key in both headers", [][2]string{{"authorization", "Bearer a"}, {"x-api-key", "a"}}, false},
		{"two different keys", [][2]string{{"authorization", "Bearer junk"}, {"x-api-key", "real"}}, true},
		{"a non-bearer authorization is no key", [][2]string{{"authorization", "Basic abc"}, {"x-api-key", "real"}}, false},
		{"one key", [][2]string{{"x-api-key", "real"}}, false},
		{"spacing is not a difference", [][2]string{{"authorization", "bearer  a "}, {"x-api-key", " a"}}, false},
		{"no key", nil, false},
		{"authorization twice with the same key, joined by Envoy", [][2]string{{"authorization", "Bearer a,Bearer a"}}, true},
		{"the key plus a second value", [][2]string{{"authorization", "Bearer a, junk"}}, true},
		{"two keys joined by a comma", [][2]string{{"authorization", "Bearer a,b"}}, true},
		{"a basic credential joined to a bearer one", [][2]string{{"authorization", "Basic x,Bearer a"}}, true},
		{"x-api-key twice with the same key", [][2]string{{"x-api-key", "a"}, {"x-api-key", "a"}}, true},
		{"x-api-key twice, the second empty", [][2]string{{"x-api-key", "a"}, {"x-api-key", ""}}, true},
		{"authorization twice as separate entries", [][2]string{{"authorization", "Bearer a"}, {"authorization", "Bearer b"}}, true},
		{"a comma in x-api-key", [][2]string{{"x-api-key", "a,b"}}, true},
		{"a header name in another case", [][2]string{{"X-Api-Key", "a"}, {"x-api-key", "a"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, conflict := Lookup(tc.h, headers)
			require.Equal(t, tc.conflict, conflict, "%v", tc.h)
		})
	}
}

// keyInWithTrimSpace is keyIn as it was, with strings.TrimSpace and
// EqualFold at every step: the oracle the in-line tests must agree with.
func keyInWithTrimSpace(name, v string) (string, bool) {
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

// A header's key is read as TrimSpace and EqualFold read it, whatever
// surrounds it: ASCII and Unicode spaces (U+0085, U+00A0, U+3000), control
// bytes, DEL, the Kelvin sign in the header's name.
func TestAKeyIsReadAsTrimSpaceAndEqualFoldReadIt(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"authorization", "Authorization", "\u212aey", "x-api-key", ""} {
		for _, v := range []string{"sk-1", " sk-1 ", "\tBearer sk-1\n", "Bearer sk-1", "bearer\tsk-1", "Bearer  sk-1 ",
			"\u00a0sk-1\u0085", "sk-1\u3000", "\x7fsk-1\x7f", "\x00sk-1", "!", "~", " ", "", "Bearer", "Bearer ", "é"} {
			k, ok := keyIn(name, v)
			wk, wok := keyInWithTrimSpace(name, v)
			require.Equal(t, wok, ok, "%q: %q", name, v)
			require.Equal(t, wk, k, "%q: %q", name, v)
		}
	}
}

func FuzzAKeyIsReadAsTrimSpaceAndEqualFoldReadIt(f *testing.F) {
	f.Add("authorization", " Bearer sk-1 ")
	f.Add("x-api-key", "\u00a0sk\u0085")
	f.Fuzz(func(t *testing.T, name, v string) {
		k, ok := keyIn(name, v)
		wk, wok := keyInWithTrimSpace(name, v)
		require.Equal(t, wok, ok)
		require.Equal(t, wk, k)
	})
}
