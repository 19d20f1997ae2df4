//go:build !wasip1

package ledger

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
)

func TestReplaysAndRetriesOfARecordAddOnce(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	_, err := s.PutPrices(ctx, at(t, "2026-01-01T00:00:00Z"), map[string]pricing.Entry{"m": flat(t, "2", "8")}, nil)
	require.NoError(t, err)
	start := at(t, "2026-09-10T12:00:00Z")
	first := rec("hold-1", "acme", "k1", "u1", "m", 1000, 500, start, 6_000_000)

	tests := []struct {
		name string
		r    Record
	}{
		{"the same record again (a replay)", first},
		{"the same id with other contents (a retry that re-read usage)", rec("hold-1", "acme", "k2", "u2", "m", 9999, 9999, start, 1)},
	}
	ok, err := s.InsertRecord(ctx, first)
	require.NoError(t, err)
	require.True(t, ok, "a new record is inserted")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, err := s.InsertRecord(ctx, tt.r)
			require.NoError(t, err)
			require.False(t, ok, "a replayed id inserts nothing and says so")
		})
	}

	// Eight concurrent retries of a new hold: exactly one inserts.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.InsertRecord(ctx, rec("hold-2", "acme", "k1", "u1", "m", 1000, 0, start, 2_000_000))
			if err == nil && ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), wins.Load())

	w := NewWorker(s, 0)
	charged := drain(t, w, "acme")
	require.Len(t, charged, 2)
	// A replay after processing inserts nothing either, and a second run
	// charges nothing.
	ok, err = s.InsertRecord(ctx, first)
	require.NoError(t, err)
	require.False(t, ok)
	require.Empty(t, drain(t, w, "acme"))

	// 1000 × $2/M + 500 × $8/M = $0.006 (6,000,000 nano-USD), plus
	// 1000 × $2/M = $0.002.
	require.Equal(t, map[string]money.Amount{
		"team/acme/month": 8_000_000, "api_key/k1/month": 8_000_000, "user/u1/month": 8_000_000,
	}, aggregates(t, s, "acme", "202609"))
	require.Equal(t, map[string]money.Amount{"api_key/k1/day": 8_000_000, "user/u1/day": 8_000_000}, aggregates(t, s, "acme", "20260910"))
	require.Equal(t, int64(2), count(t, pool, "SELECT count(*) FROM usage_charges"))
	var stored int64
	require.NoError(t, pool.QueryRow(ctx, "SELECT input_tokens FROM inference_records WHERE id = 'hold-1'").Scan(&stored))
	require.Equal(t, int64(1000), stored, "a retry never rewrites the first record")
}

func TestAnInvalidRecordIsRefusedBeforeTheDatabase(t *testing.T) {
	s, pool := newStore(t)
	ok := rec("h", "acme", "k", "u", "m", 1, 1, at(t, "2026-09-01T00:00:00Z"), 1)
	tests := []struct {
		name string
		edit func(*Record)
	}{
		{"empty id", func(r *Record) { r.ID = "" }},
		{"empty team", func(r *Record) { r.Team = "" }},
		{"empty model", func(r *Record) { r.Model = "" }},
		{"negative estimate", func(r *Record) { r.Estimate = -1 }},
		{"negative input", func(r *Record) { r.Usage.Input = -1 }},
		{"negative cached input", func(r *Record) { r.Usage.CachedInput = -1 }},
		{"negative cache write", func(r *Record) { r.Usage.CacheWrite = -1 }},
		{"negative one-hour cache write", func(r *Record) { r.Usage.CacheWrite1h = -1 }},
		{"negative output", func(r *Record) { r.Usage.Output = -1 }},
		{"call start before 1970", func(r *Record) { r.CallStart = time.Unix(-1, 0) }},
		{"call start unset", func(r *Record) { r.CallStart = time.Time{} }},
		// PostgreSQL text cannot hold them: refused here, never retried
		// (or kept in the outbox) for ever.
		{"a NUL byte in the model", func(r *Record) { r.Model = "gpt\x00" }},
		{"a user that is not UTF-8", func(r *Record) { r.User = "\xff" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			inserted, err := s.InsertRecord(context.Background(), r)
			require.ErrorIs(t, err, ErrInvalidRecord)
			require.False(t, inserted)
			require.ErrorIs(t, r.Check(), ErrInvalidRecord)
			n, err := s.InsertRecords(context.Background(), []Record{ok, r})
			require.ErrorIs(t, err, ErrInvalidRecord, "the drain's batch refuses it too, before sending anything")
			require.Zero(t, n)
		})
	}
	require.Equal(t, int64(0), count(t, pool, "SELECT count(*) FROM inference_records"))
}

func TestRecordsKeepTheirUsageByKindExactly(t *testing.T) {
	ctx := context.Background()
	s, pool := newStore(t)
	r := Record{ID: "h", Team: "acme", APIKey: "k", User: "u", Model: "claude",
		Usage:     tokens.Kinds{Input: 11, CachedInput: 22, CacheWrite: 33, CacheWrite1h: 44, Output: 55},
		CallStart: at(t, "2026-09-30T23:59:59.999999Z"), Estimate: 123456789}
	insert(t, s, r)
	var got Record
	var day, month int32
	require.NoError(t, pool.QueryRow(ctx, `SELECT id, team, api_key_id, user_id, model, input_tokens,
		cached_input_tokens, cache_write_tokens, cache_write_1h_tokens, output_tokens, call_start, estimated_cost,
		day_key, month_key FROM inference_records`).Scan(&got.ID, &got.Team, &got.APIKey, &got.User, &got.Model,
		&got.Usage.Input, &got.Usage.CachedInput, &got.Usage.CacheWrite, &got.Usage.CacheWrite1h, &got.Usage.Output,
		&got.CallStart, &got.Estimate, &day, &month))
	require.True(t, r.CallStart.Equal(got.CallStart))
	got.CallStart = r.CallStart
	require.Equal(t, r, got)
	require.Equal(t, int32(20260930), day)
	require.Equal(t, int32(202609), month)
}
