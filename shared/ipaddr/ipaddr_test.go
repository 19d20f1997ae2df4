package ipaddr

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// tricky are inputs on every rule netip's parsers apply.
var tricky = []string{
	"", "1.2.3.4", "0.0.0.0", "255.255.255.255", "256.1.1.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1..2.3", ".1.2.3",
	"1.2.3.", "1.2.3.4%eth0", "%eth0", "::", "::1", "1::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::",
	"::1:2:3:4:5:6:7", "1::2::3", "12345::", "fe80::1%eth0", "fe80::1%", "::ffff:1.2.3.4", "::ffff:1.2.3.4%z",
	"1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "2001:DB8::0:0:1", "0:0:1:0:0:0:1:0",
	"2001:db8:0:0:1:0:0:1", "1:0:0:2:0:0:0:3", ":1::", "1:", "1:2:3:4:5:6:7:8:", "::ffff:01.2.3.4", "abcd::", "g::",
	"1.2.3.4:80", "[::1]:80", "[::1]:65536", "[::1]:0080", "[1.2.3.4]:80", "::1:80", "[fe80::1%eth0]:443", "1.2.3.4:",
	":80", "[::1:80", "1.2.3.4/0", "1.2.3.4/32", "1.2.3.4/33", "1.2.3.4/08", "::/0", "::1/128", "::1/129", "fe80::1%z/64",
	"::ffff:1.2.3.4/120", "10.0.0.0/+8", "10.0.0.0/-1", "10.1.2.3/8", "2001:db8::1/33", "1.2.3.4/", "/8", "1.2.3.4/1000",
}

func checkAgainstNetip(t *testing.T, s string) {
	want, err := netip.ParseAddr(s)
	got, ok := ParseAddr(s)
	require.Equal(t, err == nil, ok, "ParseAddr(%q): %v", s, err)
	if ok {
		require.Equal(t, want.Unmap().String(), got.Unmap().String(), "ParseAddr(%q).Unmap()", s)
		if !want.Is4In6() {
			require.Equal(t, want.String(), got.String(), "ParseAddr(%q)", s)
		}
	}
	wantAP, err := netip.ParseAddrPort(s)
	got, ok = ParseAddrPort(s)
	require.Equal(t, err == nil, ok, "ParseAddrPort(%q): %v", s, err)
	if ok {
		require.Equal(t, wantAP.Addr().Unmap().String(), got.Unmap().String(), "ParseAddrPort(%q)", s)
	}
	wantP, err := netip.ParsePrefix(s)
	gotP, ok := ParsePrefix(s)
	require.Equal(t, err == nil, ok, "ParsePrefix(%q): %v", s, err)
	if ok {
		wantP = wantP.Masked()
		require.Equal(t, wantP.Bits(), gotP.Bits(), "ParsePrefix(%q)", s)
		require.Equal(t, wantP.Addr().Unmap().String(), gotP.Addr().Unmap().String(), "ParsePrefix(%q)", s)
		for _, c := range tricky {
			na, err := netip.ParseAddr(c)
			a, _ := ParseAddr(c)
			require.Equal(t, err == nil && wantP.Contains(na), gotP.Contains(a), "%q contains %q", s, c)
		}
	}
}

func TestAddressesAndPrefixesReadAsNetipReadsThem(t *testing.T) {
	for _, s := range tricky {
		checkAgainstNetip(t, s)
	}
}

func FuzzAddressesAndPrefixesReadAsNetipReadsThem(f *testing.F) {
	for _, s := range tricky {
		f.Add(s)
	}
	f.Fuzz(checkAgainstNetip)
}
