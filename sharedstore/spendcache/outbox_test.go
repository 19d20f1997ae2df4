package spendcache

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

func TestAnOutboxSumFieldReadsBackWhateverTheID(t *testing.T) {
	for _, k := range []ledger.FigureKey{
		{Scope: spend.Team, ID: "eng", Period: calendar.Month, Key: 202612},
		{Scope: spend.APIKey, ID: "k:with:colons", Period: calendar.Day, Key: 20261204},
		{Scope: spend.User, ID: "", Period: calendar.Month, Key: 202612},
	} {
		got, ok := parseSumField(sumField(k))
		require.True(t, ok, sumField(k))
		require.Equal(t, k, got)
	}
	for _, bad := range []string{"_all", "team:month:2026:eng", "team:day:202612:eng", "nobody:month:202612:x", "team:month"} {
		_, ok := parseSumField(bad)
		require.False(t, ok, bad)
	}
}

// The outbox keeps a record once per hold id, counts it per counter and
// in all, hands records to the drain oldest first, keeps them when the
// insert fails, and is empty (sums and listing included) once they are
// stored; an unreadable entry is reported and dropped, never blocking.
func TestTheOutboxKeepsEachRecordOnceAndDrainsOldestFirst(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	c := New(rdb, nil, Options{})
	start := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	rec := func(id, key string, est money.Amount) ledger.Record {
		return ledger.Record{ID: id, Team: "eng", APIKey: key, User: "alice", Model: "m", Usage: tokens.Kinds{Input: 10, Output: 2},
			CallStart: start, Estimate: est}
	}
	for _, r := range []ledger.Record{rec("h3", "k1", 30), rec("h1", "k1", 10), rec("h2", "k2", 20)} {
		added, err := c.Keep(ctx, r)
		require.NoError(t, err)
		require.True(t, added)
	}
	added, err := c.Keep(ctx, rec("h1", "k9", 999))
	require.NoError(t, err)
	require.False(t, added, "a record sent twice is kept once, as first sent")

	figs, all, err := c.OutboxPending(ctx, "eng")
	require.NoError(t, err)
	require.Equal(t, money.Amount(60), all)
	require.Equal(t, map[ledger.FigureKey]money.Amount{
		{Scope: spend.Team, ID: "eng", Period: calendar.Month, Key: 202612}:   60,
		{Scope: spend.APIKey, ID: "k1", Period: calendar.Day, Key: 20261204}:  40,
		{Scope: spend.APIKey, ID: "k1", Period: calendar.Month, Key: 202612}:  40,
		{Scope: spend.APIKey, ID: "k2", Period: calendar.Day, Key: 20261204}:  20,
		{Scope: spend.APIKey, ID: "k2", Period: calendar.Month, Key: 202612}:  20,
		{Scope: spend.User, ID: "alice", Period: calendar.Day, Key: 20261204}: 60,
		{Scope: spend.User, ID: "alice", Period: calendar.Month, Key: 202612}: 60,
	}, figs)
	teams, err := c.OutboxTeams(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"eng"}, teams)

	down := errors.New("ledger down")
	_, left, err := c.Drain(ctx, "eng", 2, func(context.Context, []ledger.Record) error { return down }, nil)
	require.ErrorIs(t, err, down)
	n, _ := c.OutboxLen(ctx, "eng")
	require.Equal(t, int64(3), n, "a failed insert removes nothing")
	require.Zero(t, left)

	require.NoError(t, rdb.HSet(ctx, outboxKey("eng"), "junk", "{not json").Err())
	require.NoError(t, rdb.ZAdd(ctx, outboxOrderKey("eng"), redis.Z{Score: 0, Member: "junk"}).Err())
	var order []string
	var bad []string
	moved, left, err := c.Drain(ctx, "eng", 2, func(_ context.Context, rs []ledger.Record) error {
		for _, r := range rs {
			order = append(order, r.ID)
		}
		return nil
	}, func(id string, _ error) { bad = append(bad, id) })
	require.NoError(t, err)
	require.Equal(t, 3, moved)
	require.Zero(t, left)
	require.Equal(t, []string{"h3", "h1", "h2"}, order, "oldest first, by arrival")
	require.Equal(t, []string{"junk"}, bad)
	figs, all, err = c.OutboxPending(ctx, "eng")
	require.NoError(t, err)
	require.Empty(t, figs)
	require.Zero(t, all)
	teams, err = c.OutboxTeams(ctx)
	require.NoError(t, err)
	require.Empty(t, teams, "an empty outbox leaves the list")
	ex, err := rdb.Exists(ctx, outboxKey("eng"), outboxOrderKey("eng"), outboxSumsKey("eng"), outboxLockKey("eng")).Result()
	require.NoError(t, err)
	require.Zero(t, ex, "nothing left behind")

	require.NoError(t, rdb.Set(ctx, outboxLockKey("eng"), "1", time.Minute).Err())
	_, _, err = c.Drain(ctx, "eng", 2, func(context.Context, []ledger.Record) error { return nil }, nil)
	require.ErrorIs(t, err, ErrOutboxBusy, "one drain per team at a time")
}
