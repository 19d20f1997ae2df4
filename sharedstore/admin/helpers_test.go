//go:build !wasip1

package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/tokenbudget/tokenbudget/sharedstore/spendcache"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/pricing"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger/pgtest"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

const adminToken = "admin-0123456789abcdef"

// fixture is the admin API over real HTTP on a ledger database and a
// Redis server of the test's own.
type fixture struct {
	t      *testing.T
	url    string
	ledger *ledger.Ledger
	pool   *pgxpool.Pool
	redis  redis.UniversalClient
	logs   *bytes.Buffer
	now    time.Time
	again  time.Duration
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = c.Close() })
	return newFixtureOn(t, c)
}

func newFixtureOn(t *testing.T, c redis.UniversalClient) *fixture {
	t.Helper()
	return newFixtureWith(t, c, -1)
}

// newFixtureWith is a fixture whose second invalidation comes again after
// a change (negative: never, so tests that warm keys see one invalidation).
func newFixtureWith(t *testing.T, c redis.UniversalClient, again time.Duration) *fixture {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = ledger.Migrate(ctx, pool)
	require.NoError(t, err)
	f := &fixture{t: t, ledger: ledger.New(pool), pool: pool, redis: c, logs: &bytes.Buffer{},
		now: time.Date(2026, 10, 15, 12, 0, 0, 0, time.UTC), again: again}
	s, err := New(Config{Ledger: f.ledger, Redis: c, Token: adminToken, Now: func() time.Time { return f.now },
		Logger: slog.New(slog.NewJSONHandler(f.logs, nil)), Timeout: 5 * time.Second, Reinvalidate: f.again})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	f.url = serve(t, s)
	return f
}

// serve runs h on a loopback HTTP server for the test and returns its URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// call sends one admin request with the admin token; it returns the status
// and the decoded JSON answer.
func (f *fixture) call(method, path, body string) (int, map[string]any) {
	f.t.Helper()
	return f.callAs("Bearer "+adminToken, method, path, body)
}

func (f *fixture) callAs(auth, method, path, body string) (int, map[string]any) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, bytes.NewBufferString(body))
	require.NoError(f.t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	require.Equal(f.t, "application/json", resp.Header.Get("Content-Type"), string(raw))
	var out map[string]any
	require.NoError(f.t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

// ok is call that must answer 200.
func (f *fixture) ok(method, path, body string) map[string]any {
	f.t.Helper()
	st, out := f.call(method, path, body)
	require.Equal(f.t, http.StatusOK, st, "%s %s: %v", method, path, out)
	return out
}

// warm fills the keys the spend cache would hold for a team.
func (f *fixture) warm(team string, keys ...string) {
	f.t.Helper()
	ctx := context.Background()
	for _, k := range keys {
		require.NoError(f.t, f.redis.Set(ctx, k, "1000", 0).Err())
	}
	require.NoError(f.t, f.redis.Set(ctx, spendcache.PolicyKey(team), "cached-policy", 0).Err())
	require.NoError(f.t, f.redis.Set(ctx, spendcache.BalanceKey(team), "5000000000", 0).Err())
}

func (f *fixture) exists(key string) bool {
	f.t.Helper()
	n, err := f.redis.Exists(context.Background(), key).Result()
	require.NoError(f.t, err)
	return n == 1
}

// charge inserts settled records and has the worker charge them, at one
// USD per million tokens of every kind.
func (f *fixture) charge(rs ...ledger.Record) {
	f.t.Helper()
	ctx := context.Background()
	f.insert(rs...)
	for _, team := range teamsOf(rs) {
		_, err := ledger.NewWorker(f.ledger, 0).RunTeam(ctx, team)
		require.NoError(f.t, err)
	}
}

func (f *fixture) insert(rs ...ledger.Record) {
	f.t.Helper()
	for _, r := range rs {
		ok, err := f.ledger.InsertRecord(context.Background(), r)
		require.NoError(f.t, err)
		require.True(f.t, ok)
	}
}

func (f *fixture) flatPrices() {
	f.t.Helper()
	one := money.Price(money.OneUSD)
	_, err := f.ledger.PutPrices(context.Background(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nil,
		&pricing.Entry{Base: pricing.Rates{Input: one, CachedInput: one, CacheWrite: one, CacheWrite1h: one, Output: one}})
	require.NoError(f.t, err)
}

func teamsOf(rs []ledger.Record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rs {
		if !seen[r.Team] {
			seen[r.Team] = true
			out = append(out, r.Team)
		}
	}
	return out
}

// record is a call of input input tokens (a million tokens cost $1 at
// flatPrices) with the filter's estimate est.
func record(id, team, key, user string, input int64, start time.Time, est money.Amount) ledger.Record {
	return ledger.Record{ID: id, Team: team, APIKey: key, User: user, Model: "m",
		Usage: tokens.Kinds{Input: input}, CallStart: start, Estimate: est}
}

func usd(t *testing.T, s string) money.Amount {
	t.Helper()
	a, err := money.Parse(s)
	require.NoError(t, err)
	return a
}
