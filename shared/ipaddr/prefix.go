package ipaddr

// Prefix is an address with its first bits significant, the rest zero.
type Prefix struct {
	a    Addr
	bits int
}

// PrefixFrom is a's first bits (clamped to a's length) with the rest
// cleared and the zone dropped, as netip.PrefixFrom(a, bits).Masked().
func PrefixFrom(a Addr, bits int) Prefix {
	bits = max(0, min(bits, int(a.bits)))
	a.zone = ""
	for i := range a.b {
		if keep := bits - 8*i; keep <= 0 {
			a.b[i] = 0
		} else if keep < 8 {
			a.b[i] &= 0xff << (8 - keep)
		}
	}
	return Prefix{a: a, bits: bits}
}

// ParsePrefix reads "address/bits" as netip.ParsePrefix does (no zone;
// bits decimal without sign or leading zero, at most the address's length)
// and masks it.
func ParsePrefix(s string) (Prefix, bool) {
	i := len(s) - 1
	for i >= 0 && s[i] != '/' {
		i--
	}
	if i < 0 {
		return Prefix{}, false
	}
	a, ok := ParseAddr(s[:i])
	digits := s[i+1:]
	if !ok || a.zone != "" || digits == "" || len(digits) > 3 || (len(digits) > 1 && digits[0] == '0') {
		return Prefix{}, false
	}
	bits := 0
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return Prefix{}, false
		}
		bits = bits*10 + int(digits[j]-'0')
	}
	if bits > int(a.bits) {
		return Prefix{}, false
	}
	return PrefixFrom(a, bits), true
}

// Addr is the prefix's (masked) address; Bits its length.
func (p Prefix) Addr() Addr { return p.a }
func (p Prefix) Bits() int  { return p.bits }

// Contains reports whether a is inside p: the same family, no zone, and
// the same first bits. An IPv4-mapped address does not match an IPv4
// prefix (Unmap it first).
func (p Prefix) Contains(a Addr) bool {
	return a.bits == p.a.bits && a.bits != 0 && a.zone == "" && PrefixFrom(a, p.bits).a == p.a
}
