// Package ipaddr reads the IP addresses and prefixes the filter matches
// clients against, by net/netip's rules (its tests hold netip as the
// oracle), without net/netip: netip interns IPv6 zones through package
// unique, which with its concurrent map is about 80 kB of the module for a
// feature the filter never uses.
package ipaddr

// Addr is an IPv4 address (in b[:4], bits 32) or an IPv6 address (b, bits
// 128, with its zone); the zero Addr is invalid.
type Addr struct {
	b    [16]byte
	bits uint8
	zone string
}

// IsValid reports whether a was parsed.
func (a Addr) IsValid() bool { return a.bits != 0 }

// Unmap turns an IPv4-mapped IPv6 address (::ffff:a.b.c.d) into the IPv4
// address, dropping its zone; any other address is returned as it is.
func (a Addr) Unmap() Addr {
	if a.bits != 128 || [12]byte(a.b[:12]) != [12]byte{10: 0xff, 11: 0xff} {
		return a
	}
	return Addr{b: [16]byte{a.b[12], a.b[13], a.b[14], a.b[15]}, bits: 32}
}

// ParseAddr reads an IPv4 dotted quad (no leading zeros) or an IPv6
// address with an optional %zone, as netip.ParseAddr does.
func ParseAddr(s string) (Addr, bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.':
			var a Addr
			return a, parseV4(s, a.b[:4]) && a.set(32)
		case ':':
			return parseV6(s)
		case '%':
			return Addr{}, false
		}
	}
	return Addr{}, false
}

func (a *Addr) set(bits uint8) bool { a.bits = bits; return true }

// ParseAddrPort reads the address of "a.b.c.d:port" or "[v6]:port", as
// netip.ParseAddrPort does (a port is decimal, at most 65535).
func ParseAddrPort(s string) (Addr, bool) {
	i := len(s) - 1
	for i >= 0 && s[i] != ':' {
		i--
	}
	if i <= 0 || i == len(s)-1 || !port(s[i+1:]) {
		return Addr{}, false
	}
	host, v6 := s[:i], false
	if host[0] == '[' {
		if len(host) < 2 || host[len(host)-1] != ']' {
			return Addr{}, false
		}
		host, v6 = host[1:len(host)-1], true
	}
	a, ok := ParseAddr(host)
	return a, ok && v6 == (a.bits == 128)
}

func port(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
		if n = n*10 + int(s[i]-'0'); n > 65535 {
			return false
		}
	}
	return true
}

// parseV4 reads four decimal octets of s into dst.
func parseV4(s string, dst []byte) bool {
	val, pos, digits := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if digits == 1 && val == 0 {
				return false // a leading zero
			}
			if val = val*10 + int(c-'0'); val > 255 {
				return false
			}
			digits++
		case c == '.' && digits > 0 && pos < 3 && i < len(s)-1:
			dst[pos] = byte(val)
			val, pos, digits = 0, pos+1, 0
		default:
			return false
		}
	}
	dst[pos] = byte(val)
	return pos == 3 && digits > 0
}

func parseV6(in string) (Addr, bool) {
	var a Addr
	s := in
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if s, a.zone = s[:i], s[i+1:]; a.zone == "" {
				return Addr{}, false
			}
			break
		}
	}
	ellipsis, i := -1, 0
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis, s = 0, s[2:]
	}
	for i < 16 && len(s) > 0 {
		off, acc := 0, 0
		for ; off < len(s) && off <= 4; off++ {
			d := hexDigit(s[off])
			if d < 0 {
				break
			}
			acc = acc<<4 | d
		}
		if off == 0 || off > 4 {
			return Addr{}, false
		}
		if off < len(s) && s[off] == '.' {
			if (ellipsis < 0 && i != 12) || i > 12 || !parseV4(s, a.b[i:i+4]) {
				return Addr{}, false
			}
			s, i = "", i+4
			break
		}
		a.b[i], a.b[i+1], i, s = byte(acc>>8), byte(acc), i+2, s[off:]
		if len(s) == 0 {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return Addr{}, false
		}
		if s = s[1:]; s[0] == ':' {
			if ellipsis >= 0 {
				return Addr{}, false
			}
			ellipsis, s = i, s[1:]
		}
	}
	switch {
	case len(s) != 0:
		return Addr{}, false
	case i < 16 && ellipsis < 0, i == 16 && ellipsis >= 0:
		return Addr{}, false
	case i < 16:
		n := 16 - i
		copy(a.b[ellipsis+n:], a.b[ellipsis:i])
		clear(a.b[ellipsis : ellipsis+n])
	}
	return a, a.set(128)
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
