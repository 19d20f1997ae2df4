package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendworker"
)

// runWorker is `sharedstore worker --database URL --redis URL --interval D`:
// the settling loop of the spend ledger (package spendworker), with its
// metrics on --listen. Any number may run: a team is charged by one at a
// time (the others skip it), so a second worker is a standby, not a
// double charge.
func runWorker(args []string) error {
	fs := flag.NewFlagSet("sharedstore worker", flag.ContinueOnError)
	database := fs.String("database", "", "PostgreSQL URL of the spend ledger (postgres://user@host:5432/db)")
	redisURL := fs.String("redis", "redis://127.0.0.1:6379/0", "redis://host:port/db or redis-cluster://host:port,host:port")
	interval := fs.Duration("interval", 10*time.Second, "time between runs")
	batch := fs.Int("batch", 0, "records charged per transaction (0: 500)")
	maxConns := fs.Int("db-max-conns", 4, "PostgreSQL connections at most")
	listen := fs.String("listen", "127.0.0.1:8082", "address serving /metrics and /healthz ('' for none)")
	once := fs.Bool("once", false, "run once and exit (for cron jobs and tests)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *database == "" {
		return errors.New("worker: --database is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("worker: unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	client, err := newClient(*redisURL, 0)
	if err != nil {
		return err
	}
	defer client.Close()
	pool, store, err := openLedger(ctx, *database, *maxConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	reg := prometheus.NewRegistry()
	w := spendworker.New(store, newSpendCache(client, store), spendworker.Options{Interval: *interval, Batch: *batch, Registry: reg, Logger: log})
	if *once {
		st, err := w.RunOnce(ctx)
		fmt.Printf("worker: %d teams, %d records charged, %d unpriced, %d refreshed, %d refresh failures\n",
			st.Teams, st.Charged, st.Unpriced, st.Refreshed, st.RefreshFailures)
		return err
	}
	if *listen != "" {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
		srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("worker metrics listener failed", "error", err)
			}
		}()
		defer srv.Close()
	}
	log.Info("spend worker running", "interval", interval.String(), "redis", redactURL(*redisURL))
	return w.Run(ctx)
}
