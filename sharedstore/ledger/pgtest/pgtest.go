//go:build !wasip1

// Package pgtest gives every test its own PostgreSQL database, created on
// the machine's server and dropped at cleanup, so no test sees another's
// data.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ServerURL is the server tests use: PGTEST_URL, else the local server
// with trust authentication for the postgres user.
func ServerURL() string {
	if u := os.Getenv("PGTEST_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Database creates a uniquely named empty database and returns its URL;
// it is dropped (terminating leftover connections) at cleanup. Without a
// reachable server the test is skipped locally, but under CI=true it fails:
// CI must never pass by skipping.
func Database(tb testing.TB) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("pgtest: PostgreSQL unreachable and CI=true: %v", err)
		}
		tb.Skipf("pgtest: PostgreSQL unreachable: %v", err)
	}
	defer admin.Close(context.Background())
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "tokenbudget_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, ServerURL())
		if err != nil {
			tb.Errorf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("pgtest: drop %s: %v", name, err)
		}
	})
	u, err := url.Parse(ServerURL())
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}
