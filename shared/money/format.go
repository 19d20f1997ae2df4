package money

import "strconv"

// String is the amount as decimal USD (see AppendUSD).
func (a Amount) String() string { return string(AppendUSD(nil, int64(a))) }

// String is the price as decimal USD per million tokens.
func (p Price) String() string { return string(AppendUSD(nil, int64(p))) }

// AppendUSD appends v nano-USD as exact decimal USD: at least two decimal
// places, at most nine, trailing zeros past the second dropped
// ("5.00", "0.15", "0.000000375", "-1.50").
func AppendUSD(dst []byte, v int64) []byte {
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = uint64(-(v + 1)) + 1 // MinInt64 has no positive twin in int64
	}
	dst = strconv.AppendUint(dst, u/uint64(OneUSD), 10)
	frac := u % uint64(OneUSD)
	var buf [Scale]byte
	for i := Scale - 1; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := Scale
	for n > 2 && buf[n-1] == '0' {
		n--
	}
	dst = append(dst, '.')
	return append(dst, buf[:n]...)
}
