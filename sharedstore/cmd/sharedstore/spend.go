package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
)

// openLedger connects to the spend ledger through a pool bounded to
// maxConns, so a burst of cache misses or settlements queues in the
// service instead of overwhelming PostgreSQL. The schema must be migrated
// (sharedstore migrate); a database that is down at start is not fatal:
// the pool connects when it answers, and until then spend calls are 503.
func openLedger(ctx context.Context, url string, maxConns int) (*pgxpool.Pool, *ledger.Ledger, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("parse --database: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = int32(maxConns)
	}
	cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open --database: %w", err)
	}
	return pool, ledger.New(pool), nil
}

// newSpendCache is the spend cache on the service's Redis over the ledger.
func newSpendCache(c redis.UniversalClient, l *ledger.Ledger) *spendcache.Cache {
	return spendcache.New(c, l, spendcache.Options{})
}

// noticePrices says once in the log when the ledger has no price list in
// effect: the worker then prices no record, and every one waits as pending
// at its estimate. It asks until the ledger answers (every retry), so a
// database that is down at start is asked again when it is back.
func noticePrices(ctx context.Context, led *ledger.Ledger, log *slog.Logger, retry time.Duration) {
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, ok, err := led.PriceListAt(qctx, time.Now())
		cancel()
		if err == nil {
			if !ok {
				log.Warn("the spend ledger has no price list in effect: the worker prices no record, and every one stays pending at its estimate until one is put",
					"fix", "PUT /v1/admin/prices with the plugin config's pricing section, e.g. curl -X PUT -H 'Authorization: Bearer <admin token>' --data-binary @prices.json http://<sharedstore>/v1/admin/prices")
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}
