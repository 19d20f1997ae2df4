package config

import (
	"errors"
	"math"
)

// Duration is a length of time in nanoseconds, written as a duration string
// ("60s", "1m30s", "500ms": digits with an optional fraction, each followed
// by ns, us, µs, ms, s, m or h) or as a number of seconds (60, 0.5, "60").
// It is read without the time package, which the module does not link.
type Duration int64

var errNotDuration = errors.New("must be a duration such as \"60s\" or \"1m\", or a number of seconds")

// UnmarshalJSON accepts the spellings documented on Duration.
func (d *Duration) UnmarshalJSON(b []byte) error {
	v, err := parseDuration(b)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// maxDurationSeconds keeps every accepted value inside int64 nanoseconds.
const maxDurationSeconds = math.MaxInt64 / 1e9

func parseDuration(b []byte) (int64, error) {
	if len(b) > 0 && b[0] == '"' {
		s, ok := unquoteDecimal(b)
		if ok && !isDecimalString(s) {
			return parseDurationText(s)
		}
	}
	sec, err := parseFloat(b)
	switch {
	case err != nil:
		return 0, errNotDuration
	case sec < 0:
		return 0, errNegativeDuration
	case sec > maxDurationSeconds:
		return 0, errTooLarge
	}
	return int64(math.Round(sec * 1e9)), nil
}

var errNegativeDuration = errors.New("must not be negative")

// durationUnits are the unit suffixes in nanoseconds, longest spelling of a
// prefix first ("ms" before "m").
var durationUnits = []struct {
	name string
	ns   float64
}{{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}}

// parseDurationText reads one or more number-unit segments.
func parseDurationText(s string) (int64, error) {
	if s == "" {
		return 0, errNotDuration
	}
	if s[0] == '-' {
		return 0, errNegativeDuration
	}
	total := 0.0
	for s != "" {
		i := 0
		for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
			i++
		}
		num := s[:i]
		if num != "" && num[0] == '.' {
			num = "0" + num // ".5s"
		}
		if !isDecimalString(num) {
			return 0, errNotDuration
		}
		v, err := parseFloat([]byte(num))
		if err != nil {
			return 0, errNotDuration
		}
		s = s[i:]
		unit := -1
		for k, u := range durationUnits {
			if len(s) >= len(u.name) && s[:len(u.name)] == u.name {
				unit = k
				break
			}
		}
		if unit < 0 {
			return 0, errNotDuration
		}
		total += v * durationUnits[unit].ns
		s = s[len(durationUnits[unit].name):]
	}
	if total > maxDurationSeconds*1e9 {
		return 0, errTooLarge
	}
	return int64(math.Round(total)), nil
}
