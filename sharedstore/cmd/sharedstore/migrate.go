package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// runMigrate is `sharedstore migrate --database URL`: it applies the
// ledger's schema steps the database lacks and says which, so a deploy
// script can run it before every start (a second run applies nothing).
func runMigrate(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("sharedstore migrate", flag.ContinueOnError)
	database := fs.String("database", "", "PostgreSQL URL of the spend ledger (postgres://user@host:5432/db)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *database == "" {
		return errors.New("migrate: --database is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("migrate: unexpected arguments %q", fs.Args())
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(*database)
	if err != nil {
		return fmt.Errorf("migrate: parse --database: %w", err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer pool.Close()
	applied, err := ledger.Migrate(ctx, pool)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if len(applied) == 0 {
		fmt.Fprintln(out, "ledger schema up to date")
		return nil
	}
	fmt.Fprintf(out, "applied ledger migrations %v\n", applied)
	return nil
}
