package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
)

func TestMigrateSubcommandAppliesTheSchemaOnceAndTheServiceFlagsStillParse(t *testing.T) {
	url := pgtest.Database(t)
	steps, err := ledger.Migrations()
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, runMigrate([]string{"--database", url}, &out))
	require.Contains(t, out.String(), "applied ledger migrations")
	out.Reset()
	require.NoError(t, runMigrate([]string{"--database", url}, &out))
	require.Equal(t, "ledger schema up to date\n", out.String())
	// The command line reaches it as a subcommand.
	require.NoError(t, run([]string{"migrate", "--database", url}))

	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer c.Close(ctx)
	var n int
	require.NoError(t, c.QueryRow(ctx, "SELECT count(*) FROM ledger_migrations").Scan(&n))
	require.Equal(t, len(steps), n)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no database", []string{"migrate"}, "--database is required"},
		{"stray argument", []string{"migrate", "--database", url, "extra"}, "unexpected arguments"},
		{"unreachable database", []string{"migrate", "--database", "postgres://postgres@127.0.0.1:1/x?connect_timeout=2", "--timeout", "5s"}, "migrate:"},
		// Without the subcommand the flags are the service's, as before.
		{"service flags", []string{"--no-such-flag"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorContains(t, run(tt.args), tt.want)
		})
	}
}

func TestTheWorkerCommandNeedsADatabaseAndTakesNoArguments(t *testing.T) {
	require.ErrorContains(t, run([]string{"worker"}), "--database is required")
	require.ErrorContains(t, run([]string{"worker", "--database", "postgres://x/y", "extra"}), "unexpected arguments")
}
