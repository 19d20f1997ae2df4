package ipaddr

// AppendTo appends a's canonical text, as netip.Addr.AppendTo does: an IPv4
// dotted quad; IPv6 in lower-case hex without leading zeros, the longest
// run of two or more zero groups (the first of equals) as "::", then the
// %zone. An IPv4-mapped address is written as IPv6 hex: Unmap it first.
func (a Addr) AppendTo(dst []byte) []byte {
	switch a.bits {
	case 32:
		for i, o := range a.b[:4] {
			if i > 0 {
				dst = append(dst, '.')
			}
			dst = appendDecimal(dst, o)
		}
	case 128:
		start, end := 8, 8 // the zero run written as "::"
		for i := 0; i < 8; i++ {
			j := i
			for j < 8 && a.group(j) == 0 {
				j++
			}
			if j-i >= 2 && j-i > end-start {
				start, end = i, j
			}
		}
		for i := 0; i < 8; i++ {
			if i == start {
				dst = append(dst, ':', ':')
				if i = end; i >= 8 {
					break
				}
			} else if i > 0 {
				dst = append(dst, ':')
			}
			dst = appendHex(dst, a.group(i))
		}
		if a.zone != "" {
			dst = append(append(dst, '%'), a.zone...)
		}
	}
	return dst
}

// String is a's canonical text, "" for the zero Addr.
func (a Addr) String() string { return string(a.AppendTo(nil)) }

func (a Addr) group(i int) uint16 { return uint16(a.b[2*i])<<8 | uint16(a.b[2*i+1]) }

func appendDecimal(dst []byte, o byte) []byte {
	if o >= 100 {
		dst = append(dst, '0'+o/100)
	}
	if o >= 10 {
		dst = append(dst, '0'+o/10%10)
	}
	return append(dst, '0'+o%10)
}

func appendHex(dst []byte, g uint16) []byte {
	const digits = "0123456789abcdef"
	started := false
	for shift := 12; shift >= 0; shift -= 4 {
		if d := g >> shift & 0xf; d != 0 || started || shift == 0 {
			dst, started = append(dst, digits[d]), true
		}
	}
	return dst
}
