package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
	"github.com/tokenbudget/tokenbudget/shared/wire"
)

// Levels reads a bucket as an admission would find it and charges nothing:
// full before any admission, less what an admission took after it.
func TestLevelsReadsTheSharedBucketsWithoutChargingThem(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			ctx := context.Background()
			op := tokOp(uniq("tok"), "global", 300, minute(6000))
			lv, err := e.store.Levels(ctx, []limit.Op{op})
			require.NoError(t, err)
			require.Equal(t, []limit.OpLevel{{Kind: limit.KindTokens, Dimension: op.Dimension, Budget: limit.PeriodMinute,
				Level: limit.Level{Capacity: 6000, Remaining: 6000}}}, lv, "a bucket no admission made is full")

			o, err := e.store.AdmitHold(ctx, limit.Plan{Tokens: []limit.Op{op}}, newHoldID())
			require.NoError(t, err)
			require.True(t, o.Admitted())
			for range 2 { // the read charges nothing
				lv, err = e.store.Levels(ctx, []limit.Op{op})
				require.NoError(t, err)
				require.InDelta(t, 5700, lv[0].Level.Remaining, 2, "refill of 100 a second, for a moment")
			}
		})
	}
}

func TestTheLevelsCallReadsTokenBucketsOnly(t *testing.T) {
	e := newEnv(t, false)
	srv := httptest.NewServer(New(Config{Buckets: e.store, Token: "tok"}))
	t.Cleanup(srv.Close)
	post := func(plan limit.Plan) int {
		req, err := http.NewRequest("POST", srv.URL+wire.PathLevels, strings.NewReader(string(wire.AppendAdmit(nil, plan))))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer tok")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		return res.StatusCode
	}
	require.Equal(t, 200, post(limit.Plan{Tokens: []limit.Op{tokOp(uniq("tok"), "global", 0, minute(10))}}))
	require.Equal(t, 400, post(limit.Plan{Requests: []limit.Op{reqOp(uniq("req"), "global", minute(10))}}))
}
