//go:build !wasip1

package ledger

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
)

func schema(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT table_name || '.' || column_name || ':' || data_type
		FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1`)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestMigrationsApplyInOrderAndApplyingTwiceChangesNothing(t *testing.T) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	require.NoError(t, err)
	defer pool.Close()
	steps, err := Migrations()
	require.NoError(t, err)
	require.NotEmpty(t, steps)
	var want []int
	for i, m := range steps {
		if i > 0 {
			require.Greater(t, m.Version, steps[i-1].Version)
		}
		want = append(want, m.Version)
	}

	applied, err := Migrate(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, want, applied)
	first := schema(t, pool)
	for _, table := range []string{"inference_records", "usage_charges", "spend_aggregates", "spend_policies",
		"team_balances", "balance_topups", "price_lists", "prices", "ledger_migrations"} {
		var exists bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists))
		require.True(t, exists, table)
	}
	require.Equal(t, int64(len(steps)), count(t, pool, "SELECT count(*) FROM ledger_migrations"))

	// Twice, and by two processes at once: nothing more is applied and the
	// schema is the same.
	again, err := Migrate(ctx, pool)
	require.NoError(t, err)
	require.Empty(t, again)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var got []int
			got, errs[i] = Migrate(ctx, pool)
			if errs[i] == nil && len(got) != 0 {
				errs[i] = errAppliedAgain
			}
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, first, schema(t, pool))
	require.Equal(t, int64(len(steps)), count(t, pool, "SELECT count(*) FROM ledger_migrations"))
}

var errAppliedAgain = errorString("a migration was applied twice")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestAMigrationChangedAfterItWasAppliedIsAnError(t *testing.T) {
	ctx := context.Background()
	_, pool := newStore(t)
	_, err := pool.Exec(ctx, "UPDATE ledger_migrations SET checksum = 'edited' WHERE version = 1")
	require.NoError(t, err)
	_, err = Migrate(ctx, pool)
	require.ErrorContains(t, err, "different contents")
}

func TestNewDatabasesAreEmptyAndOwnedByOneTest(t *testing.T) {
	ctx := context.Background()
	a, pa := newStore(t)
	_, pb := newStore(t)
	insert(t, a, rec("h1", "t", "k", "u", "m", 1, 1, at(t, "2026-09-01T00:00:00Z"), 1))
	require.Equal(t, int64(1), count(t, pa, "SELECT count(*) FROM inference_records"))
	require.Equal(t, int64(0), count(t, pb, "SELECT count(*) FROM inference_records"))
	var da, db string
	require.NoError(t, pa.QueryRow(ctx, "SELECT current_database()").Scan(&da))
	require.NoError(t, pb.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	require.NotEqual(t, da, db)
}
