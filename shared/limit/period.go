package limit

// Period is how long one Limit of a bucket lasts: how fast it refills and
// how long a caller that waits for it waits. The names are the edge form
// (config, wire, metric labels, refusal text); the core switches on the
// value.
type Period uint8

const (
	// PeriodUnknown is the zero value: no period a plan can hold. Parsing
	// never yields it for a known name, so a Limit carrying it was never
	// made by the planner.
	PeriodUnknown Period = iota
	// PeriodSecond is the request-rate bucket: a burst refilled at the rate.
	PeriodSecond
	// PeriodMinute holds one minute of the rate, refilled over the minute.
	PeriodMinute
	// PeriodDay holds one day of the rate, refilled over the day.
	PeriodDay
	// PeriodConcurrent is a concurrency bucket: it never refills with time.
	PeriodConcurrent
)

var periodNames = enumNames[Period]{"period", []string{PeriodSecond: "second", PeriodMinute: "minute", PeriodDay: "day", PeriodConcurrent: "concurrent"}}

// String is the period's name on the wire, in metric labels and in refusal
// text; "unknown" for a value no parser yields.
func (p Period) String() string { return periodNames.name(p) }

// Valid reports whether p is one of the named periods.
func (p Period) Valid() bool { return periodNames.valid(p) }

// Seconds is how long the period is, which is what a bucket that never
// refills asks a caller to wait: a second for the rate bucket, for a
// concurrency slot and for anything unknown.
func (p Period) Seconds() int64 {
	switch p {
	case PeriodMinute:
		return 60
	case PeriodDay:
		return 86400
	default:
		return 1
	}
}

// ParsePeriod reads a period's name exactly (no case folding: every writer
// of the name is this project).
func ParsePeriod(name string) (Period, bool) { return periodNames.parse(name) }

// MarshalText writes the period's name, so encoding/json writes the wire's
// string for it.
func (p Period) MarshalText() ([]byte, error) { return periodNames.marshal(p) }

// UnmarshalText reads a period's name exactly; anything else is an error.
func (p *Period) UnmarshalText(b []byte) error { return periodNames.unmarshal(p, b) }
