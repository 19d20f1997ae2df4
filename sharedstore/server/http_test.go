package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

const testToken = "t0ken-for-tests"

func newHTTP(t *testing.T, e env) *httptest.Server {
	t.Helper()
	srv := serve(t, New(Config{Buckets: e.store, Token: testToken, Registry: prometheus.NewRegistry()}))
	return srv
}

func post(t *testing.T, url, auth string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

func TestV1CallsWithoutTheRightTokenAre401(t *testing.T) {
	srv := newHTTP(t, newEnv(t, false))
	body := wire.AppendAdmit(nil, limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "global", 1, minute(10))}})
	for _, path := range []string{wire.PathAdmit, wire.PathSettle, wire.PathRelease} {
		for _, auth := range []string{"", "Bearer wrong", "Bearer " + testToken + "x", testToken, "bearer " + testToken} {
			t.Run(path+"/"+auth, func(t *testing.T) {
				code, b := post(t, srv.URL+path, auth, body)
				require.Equal(t, http.StatusUnauthorized, code)
				require.NotContains(t, string(b), testToken)
			})
		}
	}
}

func TestHTTPAdmitSettleRoundTrip(t *testing.T) {
	e := newEnv(t, false)
	srv := newHTTP(t, e)
	tk := uniq("tk")
	op := tokOp(tk, "api_key", 300, minute(1000))
	op.Private = true
	code, b := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, wire.AppendAdmit(nil, limit.Plan{Tokens: []limit.Op{op}}))
	require.Equal(t, http.StatusOK, code, string(b))
	r, err := wire.DecodeAdmitResponse(b)
	require.NoError(t, err)
	require.True(t, r.Admitted)
	require.True(t, wire.ValidHoldID(r.Hold))
	require.Len(t, r.Levels, 1)
	require.Equal(t, int64(700), r.Levels[0].Level.Remaining)

	for i, want := range []bool{true, false} {
		code, b = post(t, srv.URL+wire.PathSettle, "Bearer "+testToken, wire.AppendSettle(nil, r.Hold, 100, []string{tk}))
		require.Equal(t, http.StatusOK, code, string(b))
		var end wire.EndResponse
		require.NoError(t, json.Unmarshal(b, &end))
		require.Equal(t, want, end.Ended, "call %d", i)
	}
	require.InDelta(t, 900, level(t, e, tk, minute(1000)), 0.5)
}

// The filter names the hold and may release it before its admission runs:
// the admission then answers aborted (200, nothing committed) and counts
// as outcome "aborted"; an admission with a fresh id carries that id back.
func TestHTTPAdmitWithAReleasedHoldIDAnswersAborted(t *testing.T) {
	e := newEnv(t, false)
	reg := prometheus.NewRegistry()
	srv := serve(t, New(Config{Buckets: e.store, Token: testToken, Registry: reg}))
	tk := uniq("tk")
	p := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 300, minute(1000))}}
	auth := "Bearer " + testToken

	id := clientHoldID()
	code, b := post(t, srv.URL+wire.PathAdmit, auth, wire.AppendAdmitHold(nil, p, id))
	require.Equal(t, http.StatusOK, code, string(b))
	r, err := wire.DecodeAdmitResponse(b)
	require.NoError(t, err)
	require.True(t, r.Admitted)
	require.Equal(t, id, r.Hold)

	late := clientHoldID()
	code, b = post(t, srv.URL+wire.PathRelease, auth, wire.AppendRelease(nil, late, []string{tk}))
	require.Equal(t, http.StatusOK, code, string(b))
	require.JSONEq(t, `{"ended":false}`, string(b))
	code, b = post(t, srv.URL+wire.PathAdmit, auth, wire.AppendAdmitHold(nil, p, late))
	require.Equal(t, http.StatusOK, code, string(b))
	r, err = wire.DecodeAdmitResponse(b)
	require.NoError(t, err)
	require.Equal(t, wire.AdmitResponse{Aborted: true}, r)
	require.InDelta(t, 700, level(t, e, tk, minute(1000)), 0.5, "only the first admission holds tokens")
	require.Equal(t, 1.0, requestsCounted(t, reg, "admit", "aborted"))
}

// Each admission script call is timed under its script's name, the
// second call through the cached series as the first.
func TestEachAdmissionScriptCallIsTimedUnderItsName(t *testing.T) {
	e := newEnv(t, false)
	reg := prometheus.NewRegistry()
	srv := serve(t, New(Config{Buckets: e.store, Token: testToken, Registry: reg}))
	p := limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "api_key", 1, minute(1000))}}
	for range 3 {
		code, b := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, wire.AppendAdmitHold(nil, p, clientHoldID()))
		require.Equal(t, http.StatusOK, code, string(b))
	}
	mfs, err := reg.Gather()
	require.NoError(t, err)
	timed := map[string]uint64{}
	for _, mf := range mfs {
		if mf.GetName() == "tokenbudget_sharedstore_script_duration_seconds" {
			for _, m := range mf.GetMetric() {
				timed[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
			}
		}
	}
	require.Equal(t, map[string]uint64{"admit": 3}, timed)
}

func requestsCounted(t *testing.T, reg *prometheus.Registry, op, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "tokenbudget_sharedstore_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["operation"] == op && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestHTTPRejectsMalformedRequests(t *testing.T) {
	srv := newHTTP(t, newEnv(t, false))
	tests := []struct{ name, path, body string }{
		{"not json", wire.PathAdmit, "{"},
		{"invalid plan", wire.PathAdmit, `{"tokens":[{"key":"k","kind":9,"limits":[{"budget":"minute","capacity":1}]}]}`},
		{"non-finite refill", wire.PathAdmit, `{"tokens":[{"key":"k","kind":3,"limits":[{"budget":"minute","capacity":1,"refill_per_sec":"not-a-number"}]}]}`},
		{"bad hold id", wire.PathSettle, `{"hold":"../../etc","actual":1}`},
		{"bad hold id on release", wire.PathRelease, `{"hold":""}`},
		{"bad hold id on admit", wire.PathAdmit, `{"hold_id":"../x","tokens":[{"key":"k","kind":3,"limits":[{"budget":"minute","capacity":1}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _ := post(t, srv.URL+tt.path, "Bearer "+testToken, []byte(tt.body))
			require.Equal(t, http.StatusBadRequest, code)
		})
	}
}

func TestRedisDownAnswers503AndCountsTheError(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	reg := prometheus.NewRegistry()
	srv := serve(t, New(Config{Buckets: NewBuckets(c, Options{}), Token: testToken, Registry: reg}))
	code, _ := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, wire.AppendAdmit(nil, limit.Plan{Tokens: []limit.Op{tokOp("k", "global", 1, minute(10))}}))
	require.Equal(t, http.StatusServiceUnavailable, code)
	resp, err := http.Get(srv.URL + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	resp, err = http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Contains(t, string(b), `tokenbudget_sharedstore_redis_errors_total{operation="admit"} 1`)
	require.Contains(t, string(b), `tokenbudget_sharedstore_requests_total{operation="admit",outcome="redis_error"} 1`)
}

func TestHealthAndReadinessWithRedisUp(t *testing.T) {
	srv := newHTTP(t, newEnv(t, false))
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(srv.URL + p)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

func TestHTTPOverageRuleReachesTheHoldAndSettlesByIt(t *testing.T) {
	tests := []struct {
		name    string
		overage limit.Overage
		want    float64 // 500 capacity, 400 held, 700 used
	}{
		{"absent overage is debt", limit.OverageDebt, -200},
		{"overage skip consumes nothing it cannot cover", limit.OverageSkip, 100},
	}
	for _, e := range envs(t) {
		for _, tt := range tests {
			t.Run(e.name+"/"+tt.name, func(t *testing.T) {
				srv := newHTTP(t, e)
				tk := uniq("tk")
				p := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 400, minute(500))}, Overage: tt.overage}
				code, b := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, wire.AppendAdmitHold(nil, p, clientHoldID()))
				require.Equal(t, http.StatusOK, code, string(b))
				r, err := wire.DecodeAdmitResponse(b)
				require.NoError(t, err)
				require.True(t, r.Admitted)
				code, b = post(t, srv.URL+wire.PathSettle, "Bearer "+testToken, wire.AppendSettle(nil, r.Hold, 700, []string{tk}))
				require.Equal(t, http.StatusOK, code, string(b))
				require.InDelta(t, tt.want, level(t, e, tk, minute(500)), 0.5)
			})
		}
	}
}

func TestHTTPRefusalLargerThanTheBucketSaysExceedsCapacity(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			srv := newHTTP(t, e)
			l := limit.Limit{Budget: limit.PeriodMinute, Capacity: 20000, RefillPerSec: 20000.0 / 60}
			p := limit.Plan{Tokens: []limit.Op{tokOp(uniq("tk"), "api_key", 30000, l)}}
			code, b := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, wire.AppendAdmit(nil, p))
			require.Equal(t, http.StatusOK, code, string(b))
			require.Contains(t, string(b), `"exceeds_capacity":true`)
			r, err := wire.DecodeAdmitResponse(b)
			require.NoError(t, err)
			o := r.Outcome()
			require.False(t, o.Admitted())
			require.True(t, o.Refusal.ExceedsCapacity)
			require.Equal(t, int64(90), o.Refusal.RetryAfterSec, "its whole cost at the refill rate")
		})
	}
}

func TestHTTPRejectsAnUnknownOverageRule(t *testing.T) {
	srv := newHTTP(t, newEnv(t, false))
	code, _ := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, []byte(`{"tokens":[],"overage":"forgive"}`))
	require.Equal(t, http.StatusBadRequest, code)
}
