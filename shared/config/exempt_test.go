package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tokenbudget/tokenbudget/shared/identity"
	"github.com/tokenbudget/tokenbudget/shared/ipaddr"
)

func identityHash(raw string) string { return identity.HashKey(raw) }

func mustAddr(t *testing.T, s string) ipaddr.Addr {
	t.Helper()
	a, ok := ipaddr.ParseAddr(s)
	require.True(t, ok, s)
	return a
}

func TestExemptCoversWhitelistAndBypassKeysInBothSpellings(t *testing.T) {
	t.Parallel()
	rt, _ := mustLoad(t, `{"rate_limiting":{"whitelist":["10.0.0.0/8"],"bypass_keys":["sk-raw","sha256:`+identity.HashKey("sk-hashed")+`"]}}`)
	tests := []struct {
		name string
		addr ipaddr.Addr
		key  string
		want bool
	}{
		{"whitelisted client", mustAddr(t, "10.2.3.4"), "", true},
		{"raw bypass key", mustAddr(t, "8.8.8.8"), identity.HashKey("sk-raw"), true},
		{"hashed bypass key", mustAddr(t, "8.8.8.8"), identity.HashKey("sk-hashed"), true},
		{"other key, other client", mustAddr(t, "8.8.8.8"), identity.HashKey("sk-other"), false},
		{"raw string is not a hash", mustAddr(t, "8.8.8.8"), "sk-raw", false},
		{"invalid address, no key", ipaddr.Addr{}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rt.Exempt(tc.addr, tc.key))
		})
	}
}

func TestExemptDoesNotAllocate(t *testing.T) {
	rt, _ := mustLoad(t, `{"rate_limiting":{"whitelist":["10.0.0.0/8"],"bypass_keys":["sk-raw"]}}`)
	a := mustAddr(t, "192.0.2.1")
	h := identity.HashKey("sk-other")
	allocs := testing.AllocsPerRun(100, func() { _ = rt.Exempt(a, h); _ = rt.APIKeyRules(rt.Key(h)) })
	require.Zero(t, allocs)
}

func mustAddrB(b *testing.B, s string) ipaddr.Addr {
	b.Helper()
	a, ok := ipaddr.ParseAddr(s)
	if !ok {
		b.Fatal(s)
	}
	return a
}
