package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
)

// sharedstore with --database says once in its log when the ledger has no
// price list in effect (the worker would price nothing), asks again until
// a ledger that is down at start answers, and says nothing when a list is
// in effect.
func TestTheServiceSaysOnceWhenTheLedgerHasNoPriceListInEffect(t *testing.T) {
	one := money.Price(money.OneUSD)
	entry := pricing.Entry{Base: pricing.Rates{Input: one, CachedInput: one, CacheWrite: one, CacheWrite1h: one, Output: one}}
	tests := []struct {
		name  string
		lists []time.Time // effective_from of the stored lists
		down  bool        // the ledger is cut when the service starts
		warns bool
	}{
		{name: "no list", warns: true},
		{name: "only a list taking effect tomorrow", lists: []time.Time{time.Now().Add(24 * time.Hour)}, warns: true},
		{name: "a list in effect", lists: []time.Time{time.Now().Add(-time.Hour)}},
		{name: "no list, the ledger down at start", down: true, warns: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			url, gate := pgtest.Gated(t, pgtest.Database(t))
			pool, led, err := openLedger(ctx, url, 2)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			_, err = ledger.Migrate(ctx, pool)
			require.NoError(t, err)
			for _, at := range tt.lists {
				_, err := led.PutPrices(ctx, at, map[string]pricing.Entry{"m": entry}, nil)
				require.NoError(t, err)
			}
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			if tt.down {
				gate.Cut()
				time.AfterFunc(300*time.Millisecond, gate.Open)
			}
			done := make(chan struct{})
			go func() { noticePrices(ctx, led, log, 50*time.Millisecond); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("noticePrices never returned")
			}
			n := strings.Count(logs.String(), "no price list in effect")
			if tt.warns {
				require.Equal(t, 1, n, logs.String())
				require.Contains(t, logs.String(), "PUT /v1/admin/prices")
			} else {
				require.Zero(t, n, logs.String())
			}
		})
	}
}
