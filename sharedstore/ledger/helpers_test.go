//go:build !wasip1

package ledger

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
)

// newStore is a migrated ledger on a database of the test's own.
func newStore(t *testing.T) (*Ledger, *pgxpool.Pool) { return newStoreTB(t) }

func newStoreTB(t testing.TB) (*Ledger, *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = Migrate(ctx, pool)
	require.NoError(t, err)
	return New(pool), pool
}

func usd(t *testing.T, s string) money.Price {
	t.Helper()
	p, err := money.ParsePrice(s)
	require.NoError(t, err)
	return p
}

// flat is an entry with one rate for every input kind and one for output,
// in USD per million tokens.
func flat(t *testing.T, input, output string) pricing.Entry {
	in, out := usd(t, input), usd(t, output)
	return pricing.Entry{Base: pricing.Rates{Input: in, CachedInput: in, CacheWrite: in, CacheWrite1h: in, Output: out}}
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return v
}

func rec(id, team, key, user, model string, in, out int64, start time.Time, estimate money.Amount) Record {
	return Record{ID: id, Team: team, APIKey: key, User: user, Model: model,
		Usage: tokens.Kinds{Input: in, Output: out}, CallStart: start, Estimate: estimate}
}

func insert(t *testing.T, s *Ledger, rs ...Record) {
	t.Helper()
	for _, r := range rs {
		ok, err := s.InsertRecord(context.Background(), r)
		require.NoError(t, err)
		require.True(t, ok, r.ID)
	}
}

// figures maps "scope/id/period/key" to an amount, for comparisons.
func figures(fs []Figure) map[string]money.Amount {
	out := map[string]money.Amount{}
	for _, f := range fs {
		out[f.Scope.String()+"/"+f.ID+"/"+f.Period.String()] = f.Amount
	}
	return out
}

func aggregates(t *testing.T, s *Ledger, team, key string) map[string]money.Amount {
	t.Helper()
	fs, err := s.Aggregates(context.Background(), team, key)
	require.NoError(t, err)
	return figures(fs)
}

func count(t *testing.T, pool *pgxpool.Pool, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n
}

// drain runs the worker on the team until a run charges nothing or finds
// no more records.
func drain(t *testing.T, w *Worker, team string) []Charged {
	t.Helper()
	var all []Charged
	for i := 0; ; i++ {
		require.Less(t, i, 10_000)
		res, err := w.RunTeam(context.Background(), team)
		require.NoError(t, err)
		all = append(all, res.Charged...)
		if !res.Busy && (!res.Full || len(res.Charged) == 0) {
			return all
		}
	}
}
