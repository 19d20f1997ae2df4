//go:build !wasip1

package ledger

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
)

// BenchmarkWorkerChargesRecords is the worker's throughput on one team:
// each iteration charges one record (its share of a full batch run), with
// every record touching all five aggregates.
func BenchmarkWorkerChargesRecords(b *testing.B) {
	ctx := context.Background()
	s, pool := newStoreTB(b)
	_, err := s.PutPrices(ctx, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		map[string]pricing.Entry{"m": {Base: pricing.Rates{Input: 1_000_000_000, CachedInput: 1_000_000_000,
			CacheWrite: 1_000_000_000, CacheWrite1h: 1_000_000_000, Output: 4_000_000_000}}}, nil)
	require.NoError(b, err)
	start := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	rows := make([][]any, b.N)
	for i := range rows {
		cs := start.Add(time.Duration(i) * time.Second)
		rows[i] = []any{fmt.Sprintf("h%d", i), "acme", fmt.Sprintf("k%d", i%20), fmt.Sprintf("u%d", i%50), "m",
			int64(1000), int64(0), int64(0), int64(0), int64(200), cs, int32(20260901 + (i/86400)%28), int32(202609), int64(1_800_000)}
	}
	_, err = pool.CopyFrom(ctx, pgx.Identifier{"inference_records"}, []string{"id", "team", "api_key_id", "user_id",
		"model", "input_tokens", "cached_input_tokens", "cache_write_tokens", "cache_write_1h_tokens", "output_tokens",
		"call_start", "day_key", "month_key", "estimated_cost"}, pgx.CopyFromRows(rows))
	require.NoError(b, err)
	w := NewWorker(s, DefaultBatch)
	b.ResetTimer()
	charged := 0
	for charged < b.N {
		res, err := w.RunTeam(ctx, "acme")
		require.NoError(b, err)
		require.NotEmpty(b, res.Charged)
		charged += len(res.Charged)
	}
	b.StopTimer()
	b.ReportMetric(float64(charged)/b.Elapsed().Seconds(), "records/s")
}
