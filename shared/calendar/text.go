package calendar

// AppendKey appends the window's key: "20260930" for a day, "202609" for a
// month (the suffix of the ledger's usage keys).
func (w Window) AppendKey(dst []byte) []byte {
	n := 6
	if w.Period == Day {
		n = 8
	}
	return appendDigits(dst, int64(w.Key), n)
}

// KeyString is AppendKey as a string.
func (w Window) KeyString() string { return string(w.AppendKey(nil)) }

// EndRFC3339 is the instant the window ends, "2026-10-01T00:00:00Z".
func (w Window) EndRFC3339() string { return string(AppendRFC3339(nil, w.End)) }

// AppendRFC3339 appends the UTC instant unixSec (from 1970 on; earlier
// instants are written as the epoch) as RFC 3339 with a Z offset and no
// fraction.
func AppendRFC3339(dst []byte, unixSec int64) []byte {
	unixSec = max(unixSec, 0)
	days, secs := unixSec/secondsPerDay, unixSec%secondsPerDay
	y, m, d := civil(days)
	dst = appendDigits(dst, y, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, m, 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, d, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, secs/3600, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, secs/60%60, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, secs%60, 2)
	return append(dst, 'Z')
}

// ParseKey reads a window key: 8 digits YYYYMMDD are a day, 6 digits YYYYMM
// a month (the admin API's ?period=). It refuses dates that do not exist
// (20260230) and years before 1970.
func ParseKey(s string) (Window, bool) {
	if len(s) != 6 && len(s) != 8 {
		return Window{}, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return Window{}, false
		}
		v = v*10 + int64(s[i]-'0')
	}
	p, d := Month, int64(1)
	if len(s) == 8 {
		p, d, v = Day, v%100, v/100
	}
	y, m := v/100, v%100
	if y < 1970 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return Window{}, false
	}
	days := daysFromCivil(y, m, d)
	if days > maxDays {
		return Window{}, false // past what Unix nanoseconds in an int64 reach
	}
	return At(p, days*secondsPerDay*1e9)
}

// maxDays is the last whole day Unix nanoseconds in an int64 can name.
const maxDays = (1<<63 - 1) / 1_000_000_000 / secondsPerDay

// daysIn is the length of month m of year y.
func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// appendDigits appends v zero-padded to n digits.
func appendDigits(dst []byte, v int64, n int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || n > 0 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		n--
	}
	return append(dst, buf[i:]...)
}
