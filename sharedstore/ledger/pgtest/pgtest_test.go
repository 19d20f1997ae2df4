//go:build !wasip1

package pgtest

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

func exists(t *testing.T, name string) bool {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, ServerURL())
	require.NoError(t, err)
	defer c.Close(ctx)
	var ok bool
	require.NoError(t, c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&ok))
	return ok
}

func TestEachDatabaseIsNewAndDroppedAtCleanupEvenWithConnectionsOpen(t *testing.T) {
	var names []string
	t.Run("inner", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			raw := Database(t)
			u, err := url.Parse(raw)
			require.NoError(t, err)
			name := strings.TrimPrefix(u.Path, "/")
			names = append(names, name)
			require.True(t, exists(t, name))
			// A connection left open must not keep the database alive.
			c, err := pgx.Connect(context.Background(), raw)
			require.NoError(t, err)
			var n int
			require.NoError(t, c.QueryRow(context.Background(),
				"SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&n))
			require.Zero(t, n, "a new database is empty")
		}
	})
	require.Len(t, names, 2)
	require.NotEqual(t, names[0], names[1])
	for _, n := range names {
		require.False(t, exists(t, n), n)
	}
}
