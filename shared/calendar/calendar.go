// Package calendar turns the start time of a call into the UTC calendar
// periods spend limits count in: the day (key YYYYMMDD) and the month (key
// YYYYMM), with the Unix second each period ends at and its RFC 3339 text.
//
// Periods are calendar periods, not rolling windows: a day limit restarts
// at 00:00:00 UTC and a month limit on the 1st. A call belongs to the
// periods of its start time wherever it ends, so the caller computes the
// Window once at admission and keeps it with the request.
//
// No time package (it links syscall, which the .wasm must not): dates come
// from days since the epoch with the proleptic Gregorian civil-from-days
// arithmetic (every fourth year is a leap year, except centuries not
// divisible by 400: 2000 is leap, 2100 is not). Times before 1970 are
// rejected rather than clamped: a gateway clock there is broken, and
// counting its spend into January 1970 would hide that.
package calendar

// Period is the length of a spend period.
type Period uint8

// The periods. The zero Period is none.
const (
	Day Period = iota + 1
	Month
)

// String is the period's name in bodies, metrics and keys.
func (p Period) String() string {
	switch p {
	case Day:
		return "day"
	case Month:
		return "month"
	}
	return "none"
}

// Window is one calendar period: Key is YYYYMMDD for a day and YYYYMM for a
// month, [Start, End) its bounds in Unix seconds.
type Window struct {
	Period     Period
	Key        uint32
	Start, End int64
}

const secondsPerDay = 86400

// At is the period p containing the instant unixNano (nanoseconds since the
// Unix epoch, UTC). ok is false for an instant before 1970 or an unknown
// period.
func At(p Period, unixNano int64) (w Window, ok bool) {
	if unixNano < 0 || (p != Day && p != Month) {
		return Window{}, false
	}
	days := unixNano / 1_000_000_000 / secondsPerDay
	y, m, d := civil(days)
	if p == Day {
		return Window{Period: Day, Key: uint32(y*10000 + m*100 + d), Start: days * secondsPerDay, End: (days + 1) * secondsPerDay}, true
	}
	ny, nm := y, m+1
	if nm == 13 {
		ny, nm = y+1, 1
	}
	return Window{
		Period: Month,
		Key:    uint32(y*100 + m),
		Start:  daysFromCivil(y, m, 1) * secondsPerDay,
		End:    daysFromCivil(ny, nm, 1) * secondsPerDay,
	}, true
}

// Both is the day and the month of one instant, the pair a call records.
func Both(unixNano int64) (day, month Window, ok bool) {
	day, ok = At(Day, unixNano)
	if !ok {
		return Window{}, Window{}, false
	}
	month, _ = At(Month, unixNano)
	return day, month, true
}

// civil is the (year, month 1-12, day 1-31) of a count of days since
// 1970-01-01 (non-negative).
func civil(days int64) (y, m, d int64) {
	z := days + 719468 // days since 0000-03-01
	era := z / 146097
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365], from March 1
	mp := (5*doy + 2) / 153                                // [0, 11], March = 0
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is the inverse of civil for dates from 1970 on.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	mp := m - 3
	if m <= 2 {
		mp = m + 9
	}
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
