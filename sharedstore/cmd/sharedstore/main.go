// Command sharedstore serves fleet-wide budgets: a stateless HTTP service in
// front of Redis (or Redis Cluster) that the filter's remote store calls.
//
// With --database it also checks fleet spend limits and stores every
// settlement's inference record in the spend ledger; with --admin-token-file
// as well it serves the operators' admin API of the spend limits under
// /v1/admin/ (package admin), on its own token. `sharedstore migrate
// --database URL` applies the ledger's PostgreSQL schema instead, and
// `sharedstore worker --database URL --redis URL` runs its settling loop.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/sharedstore/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sharedstore:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 && args[0] == "migrate" {
		return runMigrate(args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "worker" {
		return runWorker(args[1:])
	}
	fs := flag.NewFlagSet("sharedstore", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8081", "address to serve HTTP on")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "redis://host:port/db or redis-cluster://host:port,host:port")
	tokenFile := fs.String("token-file", "", "file holding the bearer token (default: env SHAREDSTORE_TOKEN)")
	poolSize := fs.Int("pool-size", 0, "Redis connections per node (0: go-redis default, 10 per CPU)")
	adminTokenFile := fs.String("admin-token-file", "", "file holding the admin API's bearer token (distinct from --token-file); serves /v1/admin/ on the ledger at --database")
	database := fs.String("database", "", "PostgreSQL URL of the spend ledger: checks fleet spend limits and stores settlements ('' checks none)")
	dbMaxConns := fs.Int("db-max-conns", 8, "PostgreSQL connections at most (cache loads and settlements queue beyond it)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (subcommands: migrate)", fs.Args())
	}
	if os.Getenv("GOGC") == "" {
		// The live heap is a few megabytes (pooled connections and
		// buffers), so the default GOGC=100 collects after every few
		// hundred admissions; 400 spends a few more megabytes to take the
		// collector out of the per-admission cost. GOGC still overrides.
		debug.SetGCPercent(400)
	}
	token, err := readToken(*tokenFile)
	if err != nil {
		return err
	}
	client, err := newClient(*redisURL, *poolSize)
	if err != nil {
		return err
	}
	defer client.Close()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	var adminAPI http.Handler
	if *adminTokenFile != "" {
		h, closeAdmin, err := openAdmin(*adminTokenFile, *database, token, client, log)
		if err != nil {
			return err
		}
		defer closeAdmin()
		adminAPI = h
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	opts := server.Options{}
	cfg := server.Config{Token: token, Logger: log}
	if *database != "" {
		pool, ledgerStore, err := openLedger(ctx, *database, *dbMaxConns)
		if err != nil {
			return err
		}
		defer pool.Close()
		opts.Spend = newSpendCache(client, ledgerStore)
		cfg.Ledger = ledgerStore
		go noticePrices(ctx, ledgerStore, log, 5*time.Second)
	}
	store := server.NewBuckets(client, opts)
	cfg.Buckets = store
	loadCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if err := store.Load(loadCtx); err != nil {
		// Not fatal: /readyz reports Redis, and scripts load on NOSCRIPT.
		log.Warn("scripts not loaded at start", "error", err)
	}
	if err := store.FunctionsRefused(); err != nil {
		log.Warn("admissions and settlements run as scripts: Redis refused the function library", "error", err)
	}
	cancel()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	log.Info("sharedstore listening", "listen", *listen, "redis", redactURL(*redisURL), "admin_api", adminAPI != nil)
	h := server.New(cfg)
	// Settlements the ledger could not take wait in the Redis outbox; the
	// drain moves them into it once it answers.
	go h.RunOutbox(ctx, time.Second)
	return serve(ctx, l, h, adminAPI)
}

// serve answers on l until ctx ends, then shuts down, letting calls under
// way finish. The filter's calls are read by the front; every other
// request, and any call it does not read plainly, by net/http on the same
// listener.
func serve(ctx context.Context, l net.Listener, h *server.Server, adminAPI http.Handler) error {
	front := server.NewFront(l, h, 10*time.Second)
	srv := &http.Server{Handler: withAdmin(h, adminAPI),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- front.Serve() }()
	go func() { errc <- srv.Serve(front) }()
	select {
	case err := <-errc:
		_ = front.Close()
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(shut), front.Shutdown(shut))
}

// readToken takes the token from a file (trimmed) or SHAREDSTORE_TOKEN; an
// empty token is refused, because it would let every caller in.
func readToken(file string) (string, error) {
	tok := os.Getenv("SHAREDSTORE_TOKEN")
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("read token file: %w", err)
		}
		tok = string(b)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", errors.New("no token: set --token-file or SHAREDSTORE_TOKEN")
	}
	return tok, nil
}

// newClient parses --redis. A redis-cluster URL lists seed nodes; a
// redis URL is one server (with go-redis' own URL options: password, db).
// Either dials as go-redis does.
func newClient(raw string, pool int) (redis.UniversalClient, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse --redis: %w", err)
	}
	switch u.Scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("parse --redis: %w", err)
		}
		o.PoolSize = pool
		return redis.NewClient(o), nil
	case "redis-cluster":
		if u.Host == "" {
			return nil, errors.New("parse --redis: redis-cluster URL lists no nodes")
		}
		o := &redis.ClusterOptions{Addrs: strings.Split(u.Host, ","), PoolSize: pool}
		if u.User != nil {
			o.Username = u.User.Username()
			o.Password, _ = u.User.Password()
		}
		return redis.NewClusterClient(o), nil
	}
	return nil, fmt.Errorf("parse --redis: unknown scheme %q (want redis, rediss or redis-cluster)", u.Scheme)
}

// redactURL keeps a Redis password out of the logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
