package wire

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/jsonx"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// requireRequestDecodesLikeEncodingJSON checks that DecodeAdmitRequest
// accepts exactly what json.Unmarshal accepts and yields the same value, for
// documents whose member names are written exactly; so does its reference,
// decodeAdmitRequest, on the bodies DecodeAdmitRequest reads by their shape.
func requireRequestDecodesLikeEncodingJSON(t *testing.T, b []byte) {
	t.Helper()
	var want AdmitRequest
	wantErr := json.Unmarshal(b, &want)
	got, err := DecodeAdmitRequest(b)
	ref, refErr := decodeAdmitRequest(b)
	if wantErr != nil {
		require.Error(t, err, "encoding/json refused %q: %v", b, wantErr)
		require.Error(t, refErr, "encoding/json refused %q: %v", b, wantErr)
		return
	}
	require.NoError(t, err, "encoding/json accepted %q", b)
	require.Equal(t, want, got, "%s", b)
	require.NoError(t, refErr, "encoding/json accepted %q", b)
	require.Equal(t, want, ref, "%s", b)
}

func TestDecodeAdmitRequestAgreesWithEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{"empty object", `{}`},
		{"plan with hold and overage", `{"hold_id":"0123456789abcdef0123456789abcdef","requests":[{"key":"r","kind":1,"dimension":"api_key","limits":[{"budget":"second","capacity":10,"refill_per_sec":5}],"amount":1,"private":true}],"tokens":[{"key":"t","kind":3,"dimension":"model","limits":[{"budget":"minute","capacity":20000,"refill_per_sec":333.3333333333333},{"budget":"day","capacity":1000000,"refill_per_sec":11.574074074074074}],"amount":4242}],"overage":"skip"}`},
		{"null members leave values alone", `{"hold_id":null,"tokens":null,"overage":null}`},
		{"null op fields", `{"tokens":[{"key":null,"kind":null,"limits":null,"amount":null,"private":null}]}`},
		{"empty arrays", `{"requests":[],"tokens":[]}`},
		{"last duplicate wins", `{"overage":"skip","overage":"debt","tokens":[{"amount":1,"amount":2}]}`},
		{"duplicate arrays merge like encoding/json", `{"tokens":[{"key":"a","amount":1},{"key":"b"}],"tokens":[{"amount":9}]}`},
		{"unknown members ignored", `{"x":[1,{"y":null}],"tokens":[{"z":true,"limits":[{"w":"v"}]}]}`},
		{"escaped names", `{"h\u006fld_id":"x","tokens":[{"k\u0065y":"k"}]}`},
		{"exponent refill", `{"tokens":[{"limits":[{"refill_per_sec":1e3}]}]}`},
		{"negative amount decodes (Validate refuses it)", `{"tokens":[{"amount":-5}]}`},
		{"fractional amount", `{"tokens":[{"amount":1.5}]}`},
		{"amount too large", `{"tokens":[{"amount":9223372036854775808}]}`},
		{"refill out of float range", `{"tokens":[{"limits":[{"refill_per_sec":1e400}]}]}`},
		{"refill as a string", `{"tokens":[{"limits":[{"refill_per_sec":"not-a-number"}]}]}`},
		{"kind too large", `{"tokens":[{"kind":256}]}`},
		{"kind negative", `{"tokens":[{"kind":-1}]}`},
		{"private not a bool", `{"tokens":[{"private":1}]}`},
		{"tokens not an array", `{"tokens":{}}`},
		{"op not an object", `{"tokens":[1]}`},
		{"hold id not a string", `{"hold_id":1}`},
		{"top-level null", `null`},
		{"top-level array", `[]`},
		{"truncated", `{"tokens":[`},
		{"trailing garbage", `{}x`},
		{"empty input", ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { requireRequestDecodesLikeEncodingJSON(t, []byte(tt.body)) })
	}
}

func TestDecodeAdmitRequestMatchesMemberNamesExactly(t *testing.T) {
	r, err := DecodeAdmitRequest([]byte(`{"HOLD_ID":"x","Tokens":[{"key":"t"}],"overage":"skip"}`))
	require.NoError(t, err)
	require.Equal(t, AdmitRequest{Overage: "skip"}, r, "only exactly written names are read")
}

func TestDecodeAdmitRequestReadsWhatTheFilterWrites(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		p := samplePlan("k" + strconv.Itoa(i))
		p.Tokens[0].Amount = rng.Int64N(1 << 50)
		p.Tokens[0].Limits[0].RefillPerSec = rng.Float64() * 1e9
		if rng.IntN(2) == 0 {
			p.Overage = limit.OverageSkip
		}
		b := AppendAdmitHold(nil, p, "0123456789abcdef0123456789abcdef")
		requireRequestDecodesLikeEncodingJSON(t, b)
		got, err := DecodeAdmitRequest(b)
		require.NoError(t, err)
		require.Equal(t, p, got.Plan())
	}
}

func TestDecodeSettleAndReleaseRequests(t *testing.T) {
	s, err := DecodeSettleRequest(AppendSettle(nil, "abc", 77, []string{"a", "b\""}))
	require.NoError(t, err)
	require.Equal(t, SettleRequest{Hold: "abc", Actual: 77, Keys: []string{"a", "b\""}}, s)
	r, err := DecodeReleaseRequest(AppendRelease(nil, "abc", nil))
	require.NoError(t, err)
	require.Equal(t, ReleaseRequest{Hold: "abc"}, r)
	for _, bad := range []string{`{"hold":1}`, `{"actual":"1"}`, `{"keys":[1]}`, `[`, ``} {
		var want SettleRequest
		require.Error(t, json.Unmarshal([]byte(bad), &want))
		_, err := DecodeSettleRequest([]byte(bad))
		require.Error(t, err, bad)
	}
	_, err = DecodeReleaseRequest([]byte(`{"keys":{}}`))
	require.Error(t, err)
}

func TestAppendAdmitResponseDecodesLikeJSONMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []AdmitResponse{{}, {Aborted: true}, {Admitted: true, Hold: "h"}}
	for range 500 {
		cases = append(cases, randomResponse(rng))
	}
	for i, r := range cases {
		var got, want AdmitResponse
		require.NoError(t, json.Unmarshal(AppendAdmitResponse(nil, r), &got), "case %d", i)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &want))
		require.Equal(t, want, got, "case %d", i)
	}
	for _, ended := range []bool{true, false} {
		var got EndResponse
		require.NoError(t, json.Unmarshal(AppendEndResponse(nil, EndResponse{Ended: ended}), &got))
		require.Equal(t, ended, got.Ended)
	}
}

func FuzzDecodeAdmitRequestNeverPanics(f *testing.F) {
	f.Add(AppendAdmitHold(nil, samplePlan("k"), "0123456789abcdef0123456789abcdef"))
	f.Add([]byte(`{"tokens":[{"limits":[{"refill_per_sec":1e400}]}],"tokens":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := DecodeAdmitRequest(b); err == nil {
			_ = r.Validate()
			_ = r.Plan()
		}
		_, _ = DecodeSettleRequest(b)
		_, _ = DecodeReleaseRequest(b)
	})
}

var requestFields = []string{"hold_id", "requests", "tokens", "overage", "key", "kind", "dimension", "limits", "amount",
	"private", "budget", "capacity", "refill_per_sec",
	"spend", "team", "api_key", "user", "start_unix_nano", "day", "month", "slot", "limit_nano_usd", "fleet", "reserve_nano_usd"}

// foldsOntoAField reports whether any member name in the document matches
// a request field case-insensitively but not exactly: there encoding/json
// and DecodeAdmitRequest differ by design.
func foldsOntoAField(v jsonx.Value, fields []string) bool {
	found := false
	v.ForEach(func(raw []byte, val jsonx.Value) bool {
		if v.Kind == jsonx.Object {
			quoted := append(append([]byte{'"'}, raw...), '"')
			if k, ok := jsonx.Unquote(quoted); ok {
				for _, f := range fields {
					if k != f && strings.EqualFold(k, f) {
						found = true
					}
				}
			}
		}
		if val.Kind == jsonx.Object || val.Kind == jsonx.Array {
			found = found || foldsOntoAField(val, fields)
		}
		return !found
	})
	return found
}

func FuzzDecodeAdmitRequestAgreesWithEncodingJSON(f *testing.F) {
	f.Add(AppendAdmitHold(nil, samplePlan("k"), "0123456789abcdef0123456789abcdef"))
	f.Add([]byte(`{"tokens":[{"key":"a","amount":1},{"key":"b"}],"tokens":[{"amount":9}]}`))
	f.Add([]byte(`{"tokens":[],"tokens":[{"limits":[{"budget":"m"}]}],"tokens":[{"limits":[]}]}`))
	f.Add([]byte(`{"spend":{"team":"t","start_unix_nano":1,"day":19700101,"month":197001,"limits":[{"slot":"api_key_day","limit_nano_usd":5}]},"spend":{"limits":null}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v := jsonx.Parse(b)
		if !v.Exists() || nestingDepth(b) > jsonx.MaxDepth || foldsOntoAField(v, requestFields) {
			return
		}
		requireRequestDecodesLikeEncodingJSON(t, b)
	})
}
