package calendar

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// oracle is what Go's time package says the periods of t are.
func oracle(t time.Time) (day, month Window) {
	t = t.UTC()
	d0 := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	m0 := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	key := func(layout string, at time.Time) uint32 {
		v, _ := strconv.ParseUint(at.Format(layout), 10, 32)
		return uint32(v)
	}
	return Window{Day, key("20060102", t), d0.Unix(), d0.AddDate(0, 0, 1).Unix()},
		Window{Month, key("200601", t), m0.Unix(), m0.AddDate(0, 1, 0).Unix()}
}

func requireLikeTime(t *testing.T, at time.Time) {
	t.Helper()
	wantDay, wantMonth := oracle(at)
	day, month, ok := Both(at.UnixNano())
	require.True(t, ok, at)
	require.Equal(t, wantDay, day, at)
	require.Equal(t, wantMonth, month, at)
	require.Equal(t, at.UTC().Format("20060102"), day.KeyString())
	require.Equal(t, at.UTC().Format("200601"), month.KeyString())
	require.Equal(t, time.Unix(day.End, 0).UTC().Format(time.RFC3339), day.EndRFC3339())
	require.Equal(t, time.Unix(month.End, 0).UTC().Format(time.RFC3339), month.EndRFC3339())
	require.Equal(t, at.UTC().Truncate(time.Second).Format(time.RFC3339), string(AppendRFC3339(nil, at.Unix())))
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestPeriodsAreUTCCalendarDaysAndMonths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		at                 string
		day, month, dayEnd string
		monthEnd           string
	}{
		{"2026-09-08T12:34:56Z", "20260908", "202609", "2026-09-09T00:00:00Z", "2026-10-01T00:00:00Z"},
		{"2026-09-30T23:59:59.999999999Z", "20260930", "202609", "2026-10-01T00:00:00Z", "2026-10-01T00:00:00Z"},
		{"2026-10-01T00:00:00Z", "20261001", "202610", "2026-10-02T00:00:00Z", "2026-11-01T00:00:00Z"},
		{"2026-12-31T23:59:59Z", "20261231", "202612", "2027-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
		{"2024-02-29T08:00:00Z", "20240229", "202402", "2024-03-01T00:00:00Z", "2024-03-01T00:00:00Z"},
		{"2023-02-28T08:00:00Z", "20230228", "202302", "2023-03-01T00:00:00Z", "2023-03-01T00:00:00Z"},
		{"2000-02-29T00:00:00Z", "20000229", "200002", "2000-03-01T00:00:00Z", "2000-03-01T00:00:00Z"},
		{"2100-02-28T23:00:00Z", "21000228", "210002", "2100-03-01T00:00:00Z", "2100-03-01T00:00:00Z"},
		{"1970-01-01T00:00:00Z", "19700101", "197001", "1970-01-02T00:00:00Z", "1970-02-01T00:00:00Z"},
		{"2026-09-08T23:00:00-05:00", "20260909", "202609", "2026-09-10T00:00:00Z", "2026-10-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.at, func(t *testing.T) {
			at := utc(tt.at)
			day, month, ok := Both(at.UnixNano())
			require.True(t, ok)
			require.Equal(t, tt.day, day.KeyString())
			require.Equal(t, tt.month, month.KeyString())
			require.Equal(t, tt.dayEnd, day.EndRFC3339())
			require.Equal(t, tt.monthEnd, month.EndRFC3339())
			requireLikeTime(t, at)
		})
	}
}

// The period is the call's start: a call that starts one nanosecond before
// midnight at the end of September and settles in October keeps its day and
// month, whatever the clock says at settlement.
func TestACallStraddlingMidnightAndMonthEndKeepsItsStartPeriods(t *testing.T) {
	t.Parallel()
	clock := utc("2026-09-30T23:59:59.999999999Z").UnixNano()
	startDay, startMonth, ok := Both(clock)
	require.True(t, ok)
	clock += int64(90 * time.Second) // the call ends and settles after midnight
	endDay, endMonth, _ := Both(clock)
	require.Equal(t, "20260930", startDay.KeyString())
	require.Equal(t, "202609", startMonth.KeyString())
	require.Equal(t, "20261001", endDay.KeyString())
	require.Equal(t, "202610", endMonth.KeyString())
	require.Equal(t, startDay.End, endDay.Start, "consecutive days touch")
	require.Equal(t, startMonth.End, endMonth.Start, "consecutive months touch")
}

func TestInstantsBefore1970AreRejected(t *testing.T) {
	t.Parallel()
	for _, ns := range []int64{-1, -1e9, math.MinInt64} {
		_, ok := At(Day, ns)
		require.False(t, ok)
		_, ok = At(Month, ns)
		require.False(t, ok)
		_, _, ok = Both(ns)
		require.False(t, ok)
	}
	_, ok := At(Period(0), 0)
	require.False(t, ok, "an unknown period has no window")
	require.Equal(t, "1970-01-01T00:00:00Z", string(AppendRFC3339(nil, -5)))
}

// Every month from 1970 to the end of int64 nanoseconds (2262), at its
// first and last nanosecond and at a random instant of one random day.
func TestEveryMonthFrom1970To2262MatchesTheTimePackage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	last := time.Unix(0, math.MaxInt64)
	for at := time.Unix(0, 0).UTC(); at.Before(last); at = at.AddDate(0, 1, 0) {
		requireLikeTime(t, at)
		if end := at.AddDate(0, 1, 0).Add(-1); end.Before(last) {
			requireLikeTime(t, end)
		}
		if r := at.Add(time.Duration(rng.Int64N(int64(28 * 24 * time.Hour)))); r.Before(last) {
			requireLikeTime(t, r)
		}
	}
	requireLikeTime(t, last)
}

func TestPeriodNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, "day", Day.String())
	require.Equal(t, "month", Month.String())
	require.Equal(t, "none", Period(0).String())
}

func TestParseKeyReadsDaysAndMonthsThatExist(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		want Window
		ok   bool
	}{
		{"202609", Window{Month, 202609, utc("2026-09-01T00:00:00Z").Unix(), utc("2026-10-01T00:00:00Z").Unix()}, true},
		{"20260930", Window{Day, 20260930, utc("2026-09-30T00:00:00Z").Unix(), utc("2026-10-01T00:00:00Z").Unix()}, true},
		{"20240229", Window{Day, 20240229, utc("2024-02-29T00:00:00Z").Unix(), utc("2024-03-01T00:00:00Z").Unix()}, true},
		{"21000229", Window{}, false},
		{"20260230", Window{}, false},
		{"20261301", Window{}, false},
		{"202600", Window{}, false},
		{"196912", Window{}, false},
		{"99991231", Window{}, false},
		{"2026-09", Window{}, false},
		{"2026090", Window{}, false},
		{"+20609", Window{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, ok := ParseKey(tt.key)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
			if ok {
				require.Equal(t, tt.key, got.KeyString())
			}
		})
	}
}

func FuzzParseKeyRoundTrips(f *testing.F) {
	for _, s := range []string{"202609", "20260930", "20240229", "21000229", "000000", "22620411", "22620412"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, ok := ParseKey(s)
		if !ok {
			return
		}
		require.Equal(t, s, w.KeyString())
		layout := "200601"
		if w.Period == Day {
			layout = "20060102"
		}
		at, err := time.Parse(layout, s)
		require.NoError(t, err, "time accepts every key ParseKey accepts")
		requireLikeTime(t, at)
	})
}

func FuzzAtMatchesTheTimePackage(f *testing.F) {
	f.Add(int64(0))
	f.Add(int64(math.MaxInt64))
	f.Add(utc("2024-02-29T23:59:59.999999999Z").UnixNano())
	f.Fuzz(func(t *testing.T, ns int64) {
		if ns < 0 {
			_, ok := At(Day, ns)
			require.False(t, ok)
			return
		}
		requireLikeTime(t, time.Unix(0, ns))
	})
}
