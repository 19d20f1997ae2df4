package exchange

import (
	"github.com/tokenbudget/tokenbudget/shared/ipaddr"
	"testing"

	"github.com/stretchr/testify/require"
)

// clientAddrOf reads the peer as an exchange does, from a request whose
// source.address is peer.
func clientAddrOf(peer string) (ipaddr.Addr, string) {
	return clientAddr(&request{props: map[string]string{"source/address": peer}})
}

// The client dimension's identity is the address's canonical text, however
// Envoy spelled it; taking it from Envoy's own text must never change it.
func TestTheClientIdentityIsTheCanonicalAddressWhateverItsSpelling(t *testing.T) {
	for _, c := range []struct{ peer, want string }{
		{"10.1.2.3:40000", "10.1.2.3"},
		{"10.1.2.3", "10.1.2.3"},
		{"[::1]:80", "::1"},
		{"::1", "::1"},
		{"[2001:DB8::1]:443", "2001:db8::1"},
		{"[2001:db8:0:0:0:0:0:1]:443", "2001:db8::1"},
		{"[::ffff:10.1.2.3]:80", "10.1.2.3"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"[fe80::1%eth0]:80", "fe80::1%eth0"},
		{"10.1.2.3:notaport", ""},
		{"[1.2.3.4]:80", ""},
		{"garbage", ""},
		{"", ""},
	} {
		a, text := clientAddrOf(c.peer)
		require.Equal(t, c.want, text, c.peer)
		if c.want != "" {
			require.Equal(t, a.String(), text, c.peer)
		} else {
			require.False(t, a.IsValid(), c.peer)
		}
	}
}

func TestAMissingPeerAddressHasNoClientIdentity(t *testing.T) {
	a, text := clientAddr(&request{})
	require.False(t, a.IsValid())
	require.Empty(t, text)
}

func FuzzClientTextIsTheAddressString(f *testing.F) {
	for _, s := range []string{"10.1.2.3:1", "[::1]:2", "::ffff:1.2.3.4", "[FE80::A%en0]:3", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, peer string) {
		a, text := clientAddrOf(peer)
		if a.IsValid() {
			require.Equal(t, a.String(), text)
		} else {
			require.Empty(t, text)
		}
	})
}
