package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/sharedstore/admin"
)

// adminPoolSize bounds the admin API's PostgreSQL connections: operators'
// calls are rare and must never crowd out the ledger's other users.
const adminPoolSize = 4

// readAdminToken reads --admin-token-file (trimmed). The admin token has
// no environment fallback and must differ from the data-plane token: with
// one token every filter replica could change the limits it enforces.
func readAdminToken(file, dataToken string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("read admin token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return "", errors.New("admin token file is empty")
	case subtle.ConstantTimeCompare([]byte(tok), []byte(dataToken)) == 1:
		return "", errors.New("the admin token must differ from the data-plane token (--token-file / SHAREDSTORE_TOKEN)")
	}
	return tok, nil
}

// openAdmin builds the admin API on the ledger at database and the
// service's Redis client. The pool connects lazily: a database that is down
// at start makes admin calls answer 503 until it is back, and does not stop
// the data plane.
func openAdmin(tokenFile, database, dataToken string, client redis.UniversalClient, log *slog.Logger) (http.Handler, func(), error) {
	if database == "" {
		return nil, nil, errors.New("--admin-token-file needs --database (the spend ledger the admin API changes)")
	}
	tok, err := readAdminToken(tokenFile, dataToken)
	if err != nil {
		return nil, nil, err
	}
	pool, led, err := openLedger(context.Background(), database, adminPoolSize)
	if err != nil {
		return nil, nil, fmt.Errorf("admin: %w", err)
	}
	h, err := admin.New(admin.Config{Ledger: led, Redis: client, Token: tok, Logger: log})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return h, func() { h.Close(); pool.Close() }, nil
}

// withAdmin serves the admin API under /v1/admin/ and everything else from
// the data plane, each checking its own token.
func withAdmin(data, adm http.Handler) http.Handler {
	if adm == nil {
		return data
	}
	mux := http.NewServeMux()
	mux.Handle(admin.Prefix, adm)
	mux.Handle("/", data)
	return mux
}
