package wire

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// requireShapeReadsWhatTheWalkReads checks readOp against the member walk
// on d: where readOp takes an op, its bytes are one valid JSON value nested
// as deep as it says, and the walk reads the same op from them.
func requireShapeReadsWhatTheWalkReads(t *testing.T, d []byte) (took bool) {
	t.Helper()
	var got Op
	n, depth, ok := readOp(d, &got)
	if !ok {
		return false
	}
	raw := d[:n]
	require.True(t, jsonx.Parse(raw).Exists(), "readOp took %q, which is not one JSON value", raw)
	require.Equal(t, nestingDepth(raw), depth, "%s", raw)
	c := jsonx.Strict(raw)
	var want Op
	require.NoError(t, walkOpMembers(&c, &want), "%s", raw)
	require.True(t, c.Valid(), "%s", raw)
	require.Equal(t, want, got, "%s", raw)
	return true
}

// opBytes is one op as appendOps writes it.
func opBytes(o limit.Op) []byte {
	b := appendOps(nil, "tokens", []limit.Op{o}, false)
	return b[len(`"tokens":[`) : len(b)-1]
}

func TestEveryOpTheFilterWritesIsReadByItsShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	rates := []float64{0, 5, 20000.0 / 60, 1e6 / 86400.0, 1 << 30, 1 << 34, 1e-7, 1.5e300, math.MaxFloat64, 5e-324, 1 << 53, 1<<53 + 2}
	keys := []string{"tb|t|global|v1|", "tb|r|api_key|v7|3f2a9c", "tb|t|user|v2|josé", "日本"}
	for i := range 2000 {
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
		d := opBytes(o)
		require.True(t, requireShapeReadsWhatTheWalkReads(t, d), "the shape did not take %s", d)
	}
}

func TestAnOpSpelledAnotherWayIsLeftToTheWalk(t *testing.T) {
	const op = `{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":1.5}],"amount":7}`
	require.True(t, requireShapeReadsWhatTheWalkReads(t, []byte(op)))
	for _, edge := range []string{`{"key":"","kind":0,"dimension":"global","limits":[],"amount":-9223372036854775808}`,
		`{"key":"k","kind":255,"dimension":"global","limits":[],"amount":9223372036854775807}`} {
		require.True(t, requireShapeReadsWhatTheWalkReads(t, []byte(edge)), edge)
	}
	for name, d := range map[string]string{
		"whitespace":             `{ "key":"k","kind":3,"dimension":"model","limits":[],"amount":7}`,
		"members in other order": `{"kind":3,"key":"k","dimension":"model","limits":[],"amount":7}`,
		"an escaped key":         `{"key":"k\"","kind":3,"dimension":"model","limits":[],"amount":7}`,
		"a control byte":         "{\"key\":\"k\x01\",\"kind\":3,\"dimension\":\"model\",\"limits\":[],\"amount\":7}",
		"bytes not UTF-8":        "{\"key\":\"k\xff\",\"kind\":3,\"dimension\":\"model\",\"limits\":[],\"amount\":7}",
		"an unknown dimension":   `{"key":"k","kind":3,"dimension":"planet","limits":[],"amount":7}`,
		"a kind out of range":    `{"key":"k","kind":256,"dimension":"model","limits":[],"amount":7}`,
		"a fractional amount":    `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7.0}`,
		"an exponent amount":     `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7e0}`,
		"a leading zero":         `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":07}`,
		"beyond int64":           `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":9223372036854775808}`,
		"beyond -int64":          `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":-9223372036854775809}`,
		"twenty digits":          `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":10000000000000000000}`,
		"a rate out of range":    `{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":1e400}],"amount":7}`,
		"a rate as a string":     `{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":"not-a-number"}],"amount":7}`,
		"private false":          `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7,"private":false}`,
		"an unknown member":      `{"key":"k","kind":3,"dimension":"model","limits":[],"amount":7,"x":1}`,
		"truncated":              `{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute"`,
		"a trailing comma":       `{"key":"k","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":10,"refill_per_sec":1},],"amount":7}`,
	} {
		var o Op
		_, _, ok := readOp([]byte(d), &o)
		require.False(t, ok, name)
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

func FuzzAnOpReadByItsShapeIsTheOpTheWalkReads(f *testing.F) {
	f.Add(opBytes(samplePlan("k").Tokens[0]))
	f.Add(opBytes(samplePlan("k").Requests[0]))
	f.Add([]byte(`{"key":"k","kind":3,"dimension":"model","limits":[],"amount":-7,"private":true}`))
	f.Fuzz(func(t *testing.T, d []byte) { requireShapeReadsWhatTheWalkReads(t, d) })
}
