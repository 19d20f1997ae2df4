package limit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every named period and dimension reads back from its name, and the names
// are the wire's: changing one would change the protocol and the metrics.
func TestPeriodAndDimensionNamesRoundTripAndAreTheWiresNames(t *testing.T) {
	for p, name := range map[Period]string{PeriodSecond: "second", PeriodMinute: "minute", PeriodDay: "day", PeriodConcurrent: "concurrent"} {
		require.Equal(t, name, p.String())
		got, ok := ParsePeriod(name)
		require.True(t, ok, name)
		require.Equal(t, p, got)
		require.True(t, p.Valid())
	}
	for d, name := range map[Dimension]string{DimGlobal: "global", DimClient: "client", DimAPIKey: "api_key", DimUser: "user", DimTeam: "team", DimModel: "model"} {
		require.Equal(t, name, d.String())
		got, ok := ParseDimension(name)
		require.True(t, ok, name)
		require.Equal(t, d, got)
		require.True(t, d.Valid())
	}
	require.Equal(t, []Dimension{DimGlobal, DimClient, DimAPIKey, DimUser, DimTeam, DimModel}, Dimensions[:], "admission order")
}

// A name that is not exactly a known one is refused, never folded to a
// near match: the project writes every name it reads.
func TestAnUnknownOrDifferentlyCasedNameIsNoPeriodOrDimension(t *testing.T) {
	for _, name := range []string{"", "Minute", "MINUTE", "week", "hour", "minute ", "unknown"} {
		_, ok := ParsePeriod(name)
		require.False(t, ok, name)
	}
	for _, name := range []string{"", "API_KEY", "apikey", "tenant", "unknown"} {
		_, ok := ParseDimension(name)
		require.False(t, ok, name)
	}
	for _, p := range []Period{PeriodUnknown, Period(99)} {
		require.False(t, p.Valid())
		require.Equal(t, "unknown", p.String())
	}
	for _, d := range []Dimension{DimUnknown, Dimension(99)} {
		require.False(t, d.Valid())
		require.Equal(t, "unknown", d.String())
	}
}

// A bucket that never refills asks a caller to wait one period: a minute,
// a day, and a second for the rate bucket, a concurrency slot or anything
// unknown.
func TestAPeriodLastsItsLength(t *testing.T) {
	for p, want := range map[Period]int64{PeriodSecond: 1, PeriodMinute: 60, PeriodDay: 86400, PeriodConcurrent: 1, PeriodUnknown: 1} {
		require.Equal(t, want, p.Seconds(), p.String())
	}
}

// The zero Outcome never admits: a store that forgets to set the result
// refuses service rather than granting it.
func TestAnOutcomeAdmitsOnlyWithTheAdmittedResult(t *testing.T) {
	for r, want := range map[Result]bool{ResultFailed: false, ResultAdmitted: true, ResultRefused: false, ResultSpendRefused: false} {
		require.Equal(t, want, Outcome{Result: r}.Admitted(), r.String())
	}
	require.False(t, Outcome{}.Admitted())
}

// encoding/json writes and reads the names (the wire's form), refuses an
// unknown name and a value with no name.
func TestPeriodsAndDimensionsTravelInJSONAsTheirNames(t *testing.T) {
	t.Parallel()
	type op struct {
		Dimension Dimension `json:"dimension"`
		Budget    Period    `json:"budget"`
	}
	b, err := json.Marshal(op{DimAPIKey, PeriodMinute})
	require.NoError(t, err)
	require.JSONEq(t, `{"dimension":"api_key","budget":"minute"}`, string(b))
	var back op
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, op{DimAPIKey, PeriodMinute}, back)
	for _, bad := range []string{`{"budget":"week"}`, `{"dimension":"Api_Key"}`, `{"budget":2}`} {
		require.Error(t, json.Unmarshal([]byte(bad), &back), bad)
	}
	_, err = json.Marshal(op{})
	require.Error(t, err, "the zero values have no name")
}

func TestKindsHaveNamesForLogs(t *testing.T) {
	for k, name := range map[Kind]string{KindRequests: "requests", KindConcurrency: "concurrency", KindTokens: "tokens", 0: "unknown", 9: "unknown"} {
		require.Equal(t, name, k.String())
	}
}

// A refused name is shown quoted in the error, cut to 32 bytes, with a
// control byte or broken UTF-8 escaped rather than copied into a log.
func TestARefusedNameIsQuotedShortAndEscapedInItsError(t *testing.T) {
	for name, want := range map[string]string{
		"week":                   `unknown period "week"`,
		"we\nek":                 `unknown period "we\nek"`,
		"\xff":                   `unknown period "\xff"`,
		strings.Repeat("w", 100): `unknown period "` + strings.Repeat("w", 32) + `"`,
	} {
		var p Period
		err := p.UnmarshalText([]byte(name))
		require.EqualError(t, err, want, name)
	}
}
