package spendworker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

func TestTheWorkerReportsItsLagAndTheEstimateError(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = ledger.Migrate(ctx, pool)
	require.NoError(t, err)
	led := ledger.New(pool)
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	now := time.Now()
	later := func() time.Time { return now.Add(time.Hour) }
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	w := New(led, spendcache.New(rdb, led, spendcache.Options{Now: later}), Options{Now: later, Registry: reg,
		Logger: slog.New(slog.NewJSONHandler(&logs, nil))})

	one, err := money.ParsePrice("1")
	require.NoError(t, err)
	_, err = led.PutPrices(ctx, now.Add(-time.Hour), map[string]pricing.Entry{"m": {Base: pricing.Rates{Input: one, CachedInput: one, CacheWrite: one, CacheWrite1h: one, Output: one}}}, nil)
	require.NoError(t, err)
	for _, r := range []ledger.Record{
		// charged $0.001 against an estimate of $0.0015
		{ID: "priced", Team: "t", APIKey: "k", Model: "m", Usage: tokens.Kinds{Input: 1000}, CallStart: now, Estimate: 1_500_000},
		// no price: it stays pending, and the lag is its age
		{ID: "unpriced", Team: "t", APIKey: "k", Model: "nope", Usage: tokens.Kinds{Input: 1}, CallStart: now, Estimate: 1},
		{ID: "unpriced-2", Team: "t", APIKey: "k", Model: "nope", Usage: tokens.Kinds{Input: 1}, CallStart: now, Estimate: 1},
		{ID: "unpriced-3", Team: "u", APIKey: "k", Model: "nope", Usage: tokens.Kinds{Input: 1}, CallStart: now, Estimate: 1},
	} {
		_, err := led.InsertRecord(ctx, r)
		require.NoError(t, err)
	}
	st, err := w.RunOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, Stats{Teams: 2, Charged: 1, Unpriced: 3, Refreshed: 2}, st)
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n")) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(l, &m))
		if m["model"] != nil {
			lines = append(lines, m)
		}
	}
	require.Len(t, lines, 1, "one line per unpriced model per run, whatever its teams and records: %s", logs.String())
	require.Equal(t, "nope", lines[0]["model"])
	require.Equal(t, float64(3), lines[0]["records"])
	require.Contains(t, lines[0]["fix"], "PUT /v1/admin/prices")
	m := gather(t, reg)
	require.InDelta(t, 3600, m["tokenbudget_spend_worker_lag_seconds"].GetGauge().GetValue(), 60, "the unpriced record has waited an hour by the worker's clock")
	h := m["tokenbudget_spend_estimate_error_usd"].GetHistogram()
	require.Equal(t, uint64(1), h.GetSampleCount())
	require.InDelta(t, 0.0005, h.GetSampleSum(), 1e-12, "estimate − charge")
	require.Equal(t, 3.0, m["tokenbudget_spend_worker_records_unpriced_total"].GetCounter().GetValue())
}

// gather is each unlabelled series of reg by name.
func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf.GetMetric()[0]
	}
	return out
}
