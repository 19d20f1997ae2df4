package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestTheAdminAPIAndTheDataPlaneRefuseEachOthersTokens(t *testing.T) {
	db := pgtest.Database(t)
	require.NoError(t, runMigrate([]string{"--database", db}, io.Discard))
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = c.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	adm, closeAdmin, err := openAdmin(writeFile(t, " admin-secret\n"), db, "data-secret", c, log)
	require.NoError(t, err)
	t.Cleanup(closeAdmin)
	data := server.New(server.Config{Buckets: server.NewBuckets(c, server.Options{}), Token: "data-secret", Logger: log})
	srv := httptest.NewServer(withAdmin(data, adm))
	t.Cleanup(srv.Close)

	do := func(token, method, path, body string) int {
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, token, method, path, body string
		want                            int
	}{
		{"admin route, admin token", "admin-secret", "GET", "/v1/admin/prices", "", http.StatusOK},
		{"admin route, data-plane token", "data-secret", "GET", "/v1/admin/prices", "", http.StatusUnauthorized},
		{"admin change, data-plane token", "data-secret", "PUT", "/v1/admin/teams/t/balance", `{"balance_usd":"1"}`, http.StatusUnauthorized},
		{"data route, admin token", "admin-secret", "POST", "/v1/admit", `{}`, http.StatusUnauthorized},
		{"data route, data-plane token", "data-secret", "POST", "/v1/admit", `{}`, http.StatusOK},
		{"health needs no token", "", "GET", "/healthz", "", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, do(tt.token, tt.method, tt.path, tt.body))
		})
	}
	require.Equal(t, http.StatusOK, do("admin-secret", "PUT", "/v1/admin/teams/t/balance", `{"balance_usd":"1"}`))
	n, err := c.Exists(context.Background(), "quota:{t}:balance").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestTheAdminTokenMustBeItsOwnAndNeedsTheLedger(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	db := "postgres://postgres@127.0.0.1:5432/x"
	tests := []struct {
		name, file, database, want string
	}{
		{"same as the data-plane token", writeFile(t, "data-secret\n"), db, "must differ from the data-plane token"},
		{"empty", writeFile(t, " \n"), db, "admin token file is empty"},
		{"missing file", filepath.Join(t.TempDir(), "none"), db, "read admin token file"},
		{"no database", writeFile(t, "admin"), "", "--admin-token-file needs --database"},
		{"bad database URL", writeFile(t, "admin"), "postgres://%zz", "parse --database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := openAdmin(tt.file, tt.database, "data-secret", c, slog.Default())
			require.ErrorContains(t, err, tt.want)
		})
	}
	t.Setenv("SHAREDSTORE_TOKEN", "data-secret")
	require.ErrorContains(t, run([]string{"--redis", "redis://127.0.0.1:1/0", "--database", db,
		"--admin-token-file", writeFile(t, "data-secret")}),
		"must differ", "the service refuses to start on one token for both")
	require.ErrorContains(t, run([]string{"serve-forever"}), `unexpected arguments ["serve-forever"]`,
		"an unknown subcommand is an error, not a service started with it ignored")
}
