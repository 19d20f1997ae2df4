package refusal

import (
	"strconv"
	"strings"

	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// family is one x-ratelimit-* header triple (limit, remaining, reset).
type family uint8

const (
	familyRequestsSecond family = iota // x-ratelimit-limit/remaining/reset
	familyRequestsMinute               // x-ratelimit-requests-minute-*
	familyRequestsDay                  // x-ratelimit-requests-day-*
	familyTokensMinute                 // x-ratelimit-tokens-*
	familyTokensDay                    // x-ratelimit-tokens-day-*
)

var familyNames = [...][3]string{
	familyRequestsSecond: {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"},
	familyRequestsMinute: {"x-ratelimit-requests-minute-limit", "x-ratelimit-requests-minute-remaining", "x-ratelimit-requests-minute-reset"},
	familyRequestsDay:    {"x-ratelimit-requests-day-limit", "x-ratelimit-requests-day-remaining", "x-ratelimit-requests-day-reset"},
	familyTokensMinute:   {"x-ratelimit-tokens-limit", "x-ratelimit-tokens-remaining", "x-ratelimit-tokens-reset"},
	familyTokensDay:      {"x-ratelimit-tokens-day-limit", "x-ratelimit-tokens-day-remaining", "x-ratelimit-tokens-day-reset"},
}

// MayWrite says whether name may be one of the success headers
// (AppendSuccess, AppendSpendHeaders and AppendCompatHeaders write them):
// each is "ratelimit", "ratelimit-policy", or starts with "x-ratelimit-" or
// "x-spend-". A reader of the response that does not see the headers the
// filter wrote asks it to know when to look among them; most names it
// turns away at the first byte.
func MayWrite(name string) bool {
	switch {
	case len(name) < len("ratelimit"):
		return false
	case name[0] == 'x':
		return strings.HasPrefix(name, "x-ratelimit-") || strings.HasPrefix(name, "x-spend-")
	case name[0] == 'r':
		return name == "ratelimit" || name == "ratelimit-policy"
	}
	return false
}

// familyOf maps a bucket period to its header family; concurrency has none.
func familyOf(kind limit.Kind, budget limit.Period) (family, bool) {
	switch kind {
	case limit.KindRequests:
		switch budget {
		case limit.PeriodSecond:
			return familyRequestsSecond, true
		case limit.PeriodMinute:
			return familyRequestsMinute, true
		case limit.PeriodDay:
			return familyRequestsDay, true
		}
	case limit.KindTokens:
		switch budget {
		case limit.PeriodMinute:
			return familyTokensMinute, true
		case limit.PeriodDay:
			return familyTokensDay, true
		}
	}
	return 0, false
}

// append adds the family's three headers; reset is a Unix second, floored
// at nowUnix.
func (f family) append(h []Header, l limit.Level, nowUnix int64) []Header {
	n := familyNames[f]
	return append(h,
		Header{n[0], strconv.FormatInt(l.Capacity, 10)},
		Header{n[1], strconv.FormatInt(max(l.Remaining, 0), 10)},
		Header{n[2], strconv.FormatInt(max(l.ResetUnix, nowUnix), 10)},
	)
}

// families is a set of families already emitted.
type families uint8

func (s families) has(f family) bool      { return s&(1<<f) != 0 }
func (s families) with(f family) families { return s | 1<<f }
