package main

import (
	"context"
	"fmt"
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
