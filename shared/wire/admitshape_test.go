package wire

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

// requireShapeReadsAsTheReference holds the twin to the rule on d: where
// readAdmitRequest takes d, the reference accepts d and reads the same
// request from it. It reports whether the shape took d.
func requireShapeReadsAsTheReference(t *testing.T, d []byte) (took bool) {
	t.Helper()
	got, ok := readAdmitRequest(d)
	if !ok {
		return false
	}
	want, err := decodeAdmitRequest(d)
	require.NoError(t, err, "the shape took %q, which the reference refuses", d)
	require.Equal(t, want, got, "%s", d)
	return true
}

// randomPlan is a plan as the filter may make one: ops of every kind,
// dimension and period, extreme amounts and rates, and a spend part
// (identities, limits, fleet, reservation) half the time.
func randomPlan(rng *rand.Rand, i int) limit.Plan {
	rates := []float64{0, 5, 20000.0 / 60, 1e6 / 86400.0, 1 << 30, 1 << 34, 1e-7, 1.5e300, math.MaxFloat64, 5e-324, 1 << 53, 1<<53 + 2}
	keys := []string{"tb|t|global|v1|", "tb|r|api_key|v7|3f2a9c", "tb|t|user|v2|josé", "日本"}
	randomOps := func() []limit.Op {
		var ops []limit.Op
		for range rng.IntN(4) {
			o := limit.Op{Key: keys[rng.IntN(len(keys))] + strconv.Itoa(i), Kind: limit.Kind(rng.IntN(256)),
				Dimension: limit.Dimensions[rng.IntN(len(limit.Dimensions))], Amount: rng.Int64() >> rng.IntN(64), Private: rng.IntN(2) == 0}
			if rng.IntN(2) == 0 {
				o.Amount = -o.Amount
			}
			for range rng.IntN(4) {
				rate := rates[rng.IntN(len(rates))]
				if rng.IntN(2) == 0 {
					rate = rng.Float64() * math.Pow(10, float64(rng.IntN(40)-20))
				}
				o.Limits = append(o.Limits, limit.Limit{Budget: limit.PeriodSecond + limit.Period(rng.IntN(int(limit.PeriodConcurrent))),
					Capacity: rng.Int64() >> rng.IntN(64), RefillPerSec: rate})
			}
			ops = append(ops, o)
		}
		return ops
	}
	p := limit.Plan{Requests: randomOps(), Tokens: randomOps()}
	if rng.IntN(2) == 0 {
		p.Overage = limit.OverageSkip
	}
	if rng.IntN(2) == 0 {
		names := []string{"", "eng", "3f2a9c0d", "josé"}
		start := rng.Int64N(4e18)
		day, month, ok := calendar.Both(start)
		if !ok {
			panic(start)
		}
		pol := spend.Policy{Team: names[rng.IntN(len(names))], APIKey: names[rng.IntN(len(names))], User: names[rng.IntN(len(names))]}
		for s := range spend.NumSlots {
			if rng.IntN(2) == 0 {
				pol.Limits[s] = spend.Limit{Amount: money.Amount(rng.Int64() >> rng.IntN(64)), Set: true}
			}
		}
		p.Spend = limit.Spend{Policy: pol, Day: day, Month: month, Start: start, Fleet: rng.IntN(2) == 0}
		if rng.IntN(2) == 0 {
			p.Spend.Reserve = money.Amount(rng.Int64() >> rng.IntN(64))
		}
	}
	return p
}

func TestEveryAdmissionTheFilterWritesIsReadByItsShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	withSpend := 0
	for i := range 3000 {
		p := randomPlan(rng, i)
		hold := ""
		if rng.IntN(4) > 0 {
			hold = "0123456789abcdef0123456789abcdef"
		}
		d := AppendAdmitHold(nil, p, hold)
		require.True(t, requireShapeReadsAsTheReference(t, d), "the shape did not take %s", d)
		if p.Spend.Any() {
			withSpend++
		}
	}
	require.Greater(t, withSpend, 500, "the spend part's shape is exercised")
}

func TestAnAdmissionSpelledAnotherWayIsLeftToTheReference(t *testing.T) {
	const op = `{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":1.5}],"amount":7}`
	const sp = `{"team":"t","start_unix_nano":1,"day":19700101,"month":197001,"limits":[{"slot":"api_key_day","limit_nano_usd":5}]}`
	for _, d := range []string{`{}`, `{"tokens":[` + op + `]}`, `{"hold_id":"h","requests":[` + op + `],"tokens":[` + op + `,` + op + `],"overage":"skip","spend":` + sp + `}`,
		`{"tokens":[{"key":"","kind":0,"dimension":"global","limits":[],"amount":-9223372036854775808}]}`,
		`{"tokens":[{"key":"k","kind":255,"dimension":"global","limits":[],"amount":9223372036854775807}]}`,
		`{"spend":{"start_unix_nano":1,"day":19700101,"month":197001,"limits":null,"fleet":true,"reserve_nano_usd":-3}}`,
		`{"spend":{"start_unix_nano":1,"day":19700101,"month":197001,"limits":[]}}`} {
		require.True(t, requireShapeReadsAsTheReference(t, []byte(d)), d)
	}
	withOp := func(o string) string { return `{"tokens":[` + o + `]}` }
	for name, d := range map[string]string{
		"whitespace":               `{ "tokens":[` + op + `]}`,
		"trailing whitespace":      withOp(op) + " ",
		"members in other order":   `{"tokens":[` + op + `],"requests":[` + op + `]}`,
		"a repeated member":        `{"tokens":[` + op + `],"tokens":[` + op + `]}`,
		"an empty op array":        `{"tokens":[]}`,
		"null ops":                 `{"tokens":null}`,
		"an unknown member":        `{"x":1,"tokens":[` + op + `]}`,
		"op members in order":      withOp(`{"kind":3,"key":"k","dimension":"model","limits":[],"amount":7}`),
		"an escaped key":           withOp(`{"key":"k\"","kind":3,"dimension":"model","limits":[],"amount":7}`),
		"a control byte":           withOp("{\"key\":\"k\x01\",\"kind\":3,\"dimension\":\"model\",\"limits\":[],\"amount\":7}"),
		"bytes not UTF-8":          withOp("{\"key\":\"k\xff\",\"kind\":3,\"dimension\":\"model\",\"limits\":[],\"amount\":7}"),
		"an unknown dimension":     withOp(`{"key":"k","kind":3,"dimension":"planet","limits":[],"amount":7}`),
		"a kind out of range":      withOp(`{"key":"k","kind":256,"dimension":"model","limits":[],"amount":7}`),
		"a fractional amount":      withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7.0}`),
		"an exponent amount":       withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7e0}`),
		"a leading zero":           withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":07}`),
		"beyond int64":             withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":9223372036854775808}`),
		"beyond -int64":            withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":-9223372036854775809}`),
		"twenty digits":            withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":10000000000000000000}`),
		"a rate out of range":      withOp(`{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":1e400}],"amount":7}`),
		"a rate as a string":       withOp(`{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":"not-a-number"}],"amount":7}`),
		"private false":            withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7,"private":false}`),
		"an unknown op member":     withOp(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7,"x":1}`),
		"truncated":                withOp(`{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute"`),
		"a trailing comma":         withOp(`{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":1},],"amount":7}`),
		"an escaped spend name":    `{"spend":{"api_key":"k\"1","start_unix_nano":1,"day":19700101,"month":197001,"limits":null}}`,
		"spend without its start":  `{"spend":{"day":19700101,"month":197001,"limits":null}}`,
		"spend fleet false":        `{"spend":{"start_unix_nano":1,"day":19700101,"month":197001,"limits":null,"fleet":false}}`,
		"a spend limit as a float": `{"spend":{"start_unix_nano":1,"day":19700101,"month":197001,"limits":[{"slot":"user_day","limit_nano_usd":1.5}]}}`,
		"spend null":               `{"spend":null}`,
		"a trailing object":        `{}{}`,
	} {
		_, ok := readAdmitRequest([]byte(d))
		require.False(t, ok, name)
		requireRequestDecodesLikeEncodingJSON(t, []byte(d))
	}
}

// TestAMangledAdmissionIsReadAsTheReferenceReadsIt cuts, doubles and
// changes single bytes of admissions the filter writes: whatever the shape
// still takes, the reference reads the same.
func TestAMangledAdmissionIsReadAsTheReferenceReadsIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for i := range 300 {
		d := AppendAdmitHold(nil, randomPlan(rng, i), "0123456789abcdef0123456789abcdef")
		for range 20 {
			at := rng.IntN(len(d))
			var m []byte
			switch rng.IntN(3) {
			case 0:
				m = append(append([]byte{}, d[:at]...), d[at+1:]...)
			case 1:
				m = append(append(append([]byte{}, d[:at+1]...), d[at]), d[at+1:]...)
			default:
				m = append([]byte{}, d...)
				m[at] = `{}[],:"0-.e\ x`[rng.IntN(14)]
			}
			requireShapeReadsAsTheReference(t, m)
		}
	}
}

func TestParseFloatReadsWhatStrconvReads(t *testing.T) {
	for _, n := range []string{"0", "-0", "-0.0", "5", "333.3333333333333", "11.574074074074074", "1.7179869184e+10",
		"9007199254740992", "9007199254740993", "18014398509481984", "1e22", "1e23", "1e-22", "1e-23", "0.1", "0.000001",
		"123456789012345678901", "4.9e-324", "1.7976931348623157e308", "2.5E+3", "2.5e-0003", "1e0000400", "1e400", "-1e-400",
		"0.30000000000000004", "99999999999999999999e-20", "1e", "-", "", "1.5x"} {
		want, wantErr := strconv.ParseFloat(n, 64)
		got, ok := parseFloat([]byte(n))
		require.Equal(t, wantErr == nil, ok, n)
		require.Equal(t, math.Float64bits(want), math.Float64bits(got), "%s: %v against %v", n, got, want)
	}
}

func FuzzParseFloatReadsWhatStrconvReads(f *testing.F) {
	for _, n := range []string{"1.7179869184e+10", "-0", "33.333333333333336", "9007199254740993", "1e-22", "01", "1.", "-"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n string) {
		got, ok := parseFloat([]byte(n))
		want, err := strconv.ParseFloat(n, 64)
		if jsonx.Parse([]byte(n)).Kind != jsonx.Number {
			// decodeFloat sees only JSON numbers; elsewhere parseFloat only
			// must not accept what ParseFloat refuses.
			require.True(t, !ok || err == nil, "%q", n)
			return
		}
		require.Equal(t, err == nil, ok, n)
		require.Equal(t, math.Float64bits(want), math.Float64bits(got), "%s", n)
	})
}

func FuzzTheAdmitShapeReadsAsTheReference(f *testing.F) {
	f.Add(AppendAdmitHold(nil, samplePlan("k"), "0123456789abcdef0123456789abcdef"))
	f.Add(peersAdmitBody(true))
	f.Add([]byte(`{"tokens":[{"key":"k","kind":3,"dimension":"model","limits":[],"amount":-7,"private":true}]}`))
	f.Add([]byte(`{"spend":{"start_unix_nano":1,"day":19700101,"month":197001,"limits":[],"fleet":true,"reserve_nano_usd":5}}`))
	f.Fuzz(func(t *testing.T, d []byte) { requireShapeReadsAsTheReference(t, d) })
}
