package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

func samplePlan(key string) limit.Plan {
	return limit.Plan{
		Requests: []limit.Op{
			{Key: "rq:" + key, Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Private: true, Amount: 1,
				Limits: []limit.Limit{{Budget: limit.PeriodSecond, Capacity: 10, RefillPerSec: 5}}},
			{Key: "cc:" + key, Kind: limit.KindConcurrency, Dimension: limit.DimGlobal, Amount: 1,
				Limits: []limit.Limit{{Budget: limit.PeriodConcurrent, Capacity: 3}}},
		},
		Tokens: []limit.Op{
			{Key: "tk:" + key, Kind: limit.KindTokens, Dimension: limit.DimModel, Amount: 4242,
				Limits: []limit.Limit{{Budget: limit.PeriodMinute, Capacity: 20000, RefillPerSec: 20000.0 / 60}, {Budget: limit.PeriodDay, Capacity: 1e6, RefillPerSec: 1e6 / 86400.0}}},
		},
	}
}

func TestAppendAdmitDecodesToTheSamePlan(t *testing.T) {
	for _, key := range []string{"plain", `q"uote\back`, "ctl\x00\x1f\n", "utf8-é-日本", "bad\xff\xfeutf8", "{brace}"} {
		t.Run(key, func(t *testing.T) {
			p := samplePlan(key)
			var got AdmitRequest
			require.NoError(t, json.Unmarshal(AppendAdmit(nil, p), &got))
			want, err := json.Marshal(FromPlan(p))
			require.NoError(t, err)
			var wantReq AdmitRequest
			require.NoError(t, json.Unmarshal(want, &wantReq))
			require.Equal(t, wantReq, got)
		})
	}
}

func TestAppendAdmitHoldCarriesTheCallersHoldID(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	tests := []struct {
		name string
		plan limit.Plan
	}{
		{"requests and tokens", samplePlan("k")},
		{"tokens only", limit.Plan{Tokens: samplePlan("k").Tokens}},
		{"requests only", limit.Plan{Requests: samplePlan("k").Requests}},
		{"empty plan", limit.Plan{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendAdmitHold(nil, tt.plan, id)
			var got AdmitRequest
			require.NoError(t, json.Unmarshal(b, &got), string(b))
			want := FromPlan(tt.plan)
			want.HoldID = id
			require.Equal(t, want, got)
			require.NoError(t, got.Validate())
		})
	}
	var got AdmitRequest
	require.NoError(t, json.Unmarshal(AppendAdmitHold(nil, samplePlan("k"), ""), &got))
	require.Empty(t, got.HoldID, "an empty id is left out for the server to choose")
	require.Equal(t, AppendAdmit(nil, samplePlan("k")), AppendAdmitHold(nil, samplePlan("k"), ""))
}

func TestPlanSurvivesTheWireExactly(t *testing.T) {
	p := samplePlan("k")
	var got AdmitRequest
	require.NoError(t, json.Unmarshal(AppendAdmit(nil, p), &got))
	require.Equal(t, p, got.Plan())
}

func TestOverageRuleTravelsOnTheWireAndDebtIsTheAbsentDefault(t *testing.T) {
	tests := []struct {
		name    string
		plan    limit.Plan
		overage limit.Overage
		wire    string // the member the body carries, "" for none
	}{
		{"debt with requests and tokens", samplePlan("k"), limit.OverageDebt, ""},
		{"skip with requests and tokens", samplePlan("k"), limit.OverageSkip, `"overage":"skip"`},
		{"skip with tokens only", limit.Plan{Tokens: samplePlan("k").Tokens}, limit.OverageSkip, `"overage":"skip"`},
		{"skip with requests only", limit.Plan{Requests: samplePlan("k").Requests}, limit.OverageSkip, `"overage":"skip"`},
		{"skip on an empty plan", limit.Plan{}, limit.OverageSkip, `"overage":"skip"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.plan
			p.Overage = tt.overage
			for _, id := range []string{"", "0123456789abcdef0123456789abcdef"} {
				b := AppendAdmitHold(nil, p, id)
				if tt.wire == "" {
					require.NotContains(t, string(b), "overage")
				} else {
					require.Contains(t, string(b), tt.wire)
				}
				var got AdmitRequest
				require.NoError(t, json.Unmarshal(b, &got), string(b))
				require.NoError(t, got.Validate())
				require.Equal(t, tt.overage, got.Plan().Overage)
				want := FromPlan(p)
				want.HoldID = id
				require.Equal(t, want, got)
			}
		})
	}
	var explicit AdmitRequest
	require.NoError(t, json.Unmarshal([]byte(`{"overage":"debt"}`), &explicit))
	require.NoError(t, explicit.Validate())
	require.Equal(t, limit.OverageDebt, explicit.Plan().Overage, "debt may be said aloud")
}

func TestRefusalExceedingCapacitySurvivesTheWire(t *testing.T) {
	for _, exceeds := range []bool{true, false} {
		o := limit.Outcome{Refusal: &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimAPIKey, Budget: limit.PeriodMinute,
			RetryAfterSec: 90, ExceedsCapacity: exceeds}}
		b, err := json.Marshal(FromOutcome(o))
		require.NoError(t, err)
		require.Equal(t, exceeds, strings.Contains(string(b), `"exceeds_capacity":true`), string(b))
		r, err := DecodeAdmitResponse(b)
		require.NoError(t, err)
		require.Equal(t, exceeds, r.Outcome().Refusal.ExceedsCapacity)
	}
}

func TestNonFiniteRefillIsRefusedByTheDecoder(t *testing.T) {
	p := samplePlan("k")
	p.Tokens[0].Limits[0].RefillPerSec = posInf()
	var got AdmitRequest
	require.Error(t, json.Unmarshal(AppendAdmit(nil, p), &got))
}

func posInf() float64 { z := 0.0; return 1 / z }

func TestSettleAndReleaseBodiesDecode(t *testing.T) {
	var s SettleRequest
	require.NoError(t, json.Unmarshal(AppendSettle(nil, "abc", 77, []string{"a", "b\""}), &s))
	require.Equal(t, SettleRequest{Hold: "abc", Actual: 77, Keys: []string{"a", "b\""}}, s)
	var r ReleaseRequest
	require.NoError(t, json.Unmarshal(AppendRelease(nil, "abc", nil), &r))
	require.Equal(t, ReleaseRequest{Hold: "abc"}, r)
}

func TestOutcomeRoundTripWithholdsSharedRefusalLevel(t *testing.T) {
	tests := []struct {
		name      string
		private   bool
		wantLevel limit.Level
	}{
		{"private refusal keeps its level", true, limit.Level{Capacity: 10, Remaining: 2, ResetUnix: 99}},
		{"shared refusal drops its level", false, limit.Level{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := limit.Outcome{Result: limit.ResultRefused, Refusal: &limit.Refusal{Kind: limit.KindTokens, Dimension: limit.DimGlobal, Budget: limit.PeriodDay,
				RetryAfterSec: 7, Private: tt.private, Level: limit.Level{Capacity: 10, Remaining: 2, ResetUnix: 99}},
				Levels: []limit.OpLevel{{Kind: limit.KindRequests, Dimension: limit.DimAPIKey, Budget: limit.PeriodSecond, Level: limit.Level{Capacity: 5, Remaining: 4, ResetUnix: 3}}}}
			b, err := json.Marshal(FromOutcome(o))
			require.NoError(t, err)
			if !tt.private {
				require.NotContains(t, string(b), `"remaining":2`)
			}
			r, err := DecodeAdmitResponse(b)
			require.NoError(t, err)
			got := r.Outcome()
			require.Equal(t, tt.wantLevel, got.Refusal.Level)
			require.Equal(t, int64(7), got.Refusal.RetryAfterSec)
			require.Equal(t, o.Levels, got.Levels)
		})
	}
}

func TestValidateRejectsWhatTheStoreCannotAdmit(t *testing.T) {
	ok := func() AdmitRequest { return FromPlan(samplePlan("k")) }
	tests := []struct {
		name   string
		mutate func(*AdmitRequest)
	}{
		{"unknown kind", func(r *AdmitRequest) { r.Requests[0].Kind = 9 }},
		{"empty key", func(r *AdmitRequest) { r.Requests[0].Key = "" }},
		{"no limits", func(r *AdmitRequest) { r.Tokens[0].Limits = nil }},
		{"negative amount", func(r *AdmitRequest) { r.Tokens[0].Amount = -1 }},
		{"negative refill", func(r *AdmitRequest) { r.Tokens[0].Limits[0].RefillPerSec = -1 }},
		{"huge capacity", func(r *AdmitRequest) { r.Tokens[0].Limits[0].Capacity = 1 << 60 }},
		{"duplicate budget", func(r *AdmitRequest) { r.Tokens[0].Limits[1].Budget = limit.PeriodMinute }},
		{"no budget period", func(r *AdmitRequest) { r.Tokens[0].Limits[0].Budget = limit.PeriodUnknown }},
		{"no dimension", func(r *AdmitRequest) { r.Requests[0].Dimension = limit.DimUnknown }},
		{"duplicate key", func(r *AdmitRequest) { r.Tokens[0].Key = r.Requests[0].Key }},
		{"token op in requests", func(r *AdmitRequest) { r.Requests[0].Kind = limit.KindTokens }},
		{"request op in tokens", func(r *AdmitRequest) { r.Tokens[0].Kind = limit.KindRequests }},
		{"hold id not hex", func(r *AdmitRequest) { r.HoldID = "../../../etc/passwd0123456789abc" }},
		{"hold id too short", func(r *AdmitRequest) { r.HoldID = "abc" }},
		{"unknown overage rule", func(r *AdmitRequest) { r.Overage = "forgive" }},
	}
	require.NoError(t, ok().Validate())
	withID := ok()
	withID.HoldID = "0123456789abcdef0123456789abcdef"
	require.NoError(t, withID.Validate())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok()
			tt.mutate(&r)
			require.Error(t, r.Validate())
		})
	}
}

func TestValidHoldIDAcceptsOnlyServerIDs(t *testing.T) {
	require.True(t, ValidHoldID("0123456789abcdef0123456789abcdef"))
	require.False(t, ValidHoldID("0123456789ABCDEF0123456789abcdef"))
	require.False(t, ValidHoldID("short"))
	require.False(t, ValidHoldID(""))
}

func FuzzAppendStringMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\", "\x00\xff", "é\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var got string
		require.NoError(t, json.Unmarshal(jsonx.AppendString(nil, s), &got))
		want, err := json.Marshal(s)
		require.NoError(t, err)
		var wantS string
		require.NoError(t, json.Unmarshal(want, &wantS))
		require.Equal(t, wantS, got)
	})
}

func FuzzDecodeAdmitResponseNeverPanics(f *testing.F) {
	f.Add([]byte(`{"admitted":true,"hold":"x","levels":[{"level":{"remaining":1}}]}`))
	f.Add([]byte(`{"refusal":{"private":true,"level":null}}`))
	f.Add([]byte(`{"admitted":false,"spend":{"checked":true,"unavailable":true,"refusal":{"slot":"team_month","used_nano_usd":-1}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeAdmitResponse(b)
		if err == nil {
			_ = r.Outcome()
		}
	})
}

// A converted plan's ops share one array of limits, yet each op's limits are
// its own: appending to one never changes another's.
func TestAPlanOpsLimitsAreEachTheirOwn(t *testing.T) {
	p := samplePlan("k")
	tests := []struct {
		name string
		ops  func(*limit.Plan) []limit.Op
	}{
		{"requests", func(p *limit.Plan) []limit.Op { return p.Requests }},
		{"tokens", func(p *limit.Plan) []limit.Op { return p.Tokens }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FromPlan(p).Plan()
			for i := range tt.ops(&got) {
				op := &tt.ops(&got)[i]
				op.Limits = append(op.Limits, limit.Limit{Budget: limit.PeriodDay, Capacity: -1})
			}
			for _, group := range [][2][]limit.Op{{p.Requests, got.Requests}, {p.Tokens, got.Tokens}} {
				for i, op := range group[0] {
					require.Equal(t, op.Limits, group[1][i].Limits[:len(op.Limits)])
				}
			}
		})
	}
}
