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
	"github.com/tokenbudget/tokenbudget/shared/wire"
	"github.com/tokenbudget/tokenbudget/sharedstore"
)

const testToken = "t0ken-for-tests"

func newHTTP(t *testing.T, e env) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(New(Config{Store: e.store, Token: testToken, Registry: prometheus.NewRegistry()}))
	t.Cleanup(srv.Close)
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
	body := wire.AppendAdmit(nil, sharedstore.Plan{Tokens: []sharedstore.Op{tokOp(uniq("tk"), "global", 1, minute(10))}})
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
	code, b := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, wire.AppendAdmit(nil, sharedstore.Plan{Tokens: []sharedstore.Op{op}}))
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

func TestHTTPRejectsMalformedRequests(t *testing.T) {
	srv := newHTTP(t, newEnv(t, false))
	tests := []struct{ name, path, body string }{
		{"not json", wire.PathAdmit, "{"},
		{"invalid plan", wire.PathAdmit, `{"tokens":[{"key":"k","kind":9,"limits":[{"budget":"minute","capacity":1}]}]}`},
		{"non-finite refill", wire.PathAdmit, `{"tokens":[{"key":"k","kind":3,"limits":[{"budget":"minute","capacity":1,"refill_per_sec":"not-a-number"}]}]}`},
		{"bad hold id", wire.PathSettle, `{"hold":"../../etc","actual":1}`},
		{"bad hold id on release", wire.PathRelease, `{"hold":""}`},
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
	srv := httptest.NewServer(New(Config{Store: NewStore(c, Options{}), Token: testToken, Registry: reg}))
	t.Cleanup(srv.Close)
	code, _ := post(t, srv.URL+wire.PathAdmit, "Bearer "+testToken, wire.AppendAdmit(nil, sharedstore.Plan{Tokens: []sharedstore.Op{tokOp("k", "global", 1, minute(10))}}))
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
