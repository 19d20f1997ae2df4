//go:build !wasip1

package spendcache

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/tokenbudget/tokenbudget/shared/calendar"
	"github.com/tokenbudget/tokenbudget/shared/errs"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
	"github.com/tokenbudget/tokenbudget/shared/tokens"
	"github.com/tokenbudget/tokenbudget/sharedstore/ledger"
)

// The outbox keeps the inference records the ledger could not take (a
// PostgreSQL outage) in Redis, under the team's hash tag, until a drain
// moves them into the ledger. A settlement kept there is answered as taken
// and its postflight runs at once, so the counters keep moving and the
// limits keep holding while the database is down; the cache's loads and
// refreshes, and the admin API's spend report, count the outbox as pending
// spend. Per team:
//
//   - quota:{team}:spend:outbox, a hash of hold id → record (JSON), so a
//     record sent twice is kept once;
//   - quota:{team}:spend:outbox:order, a sorted set of the hold ids by
//     arrival, so a drain moves the oldest first;
//   - quota:{team}:spend:outbox:sums, a hash of the kept estimates per
//     counter (field "<slot>:<period key>:<id>"), with '_n' records and
//     '_all' estimates in all ('_seq' numbers the arrivals);
//
// and OutboxTeamsKey lists the teams whose outbox may hold records. None of
// these keys expires: they are the only copy of a record until it is
// drained (see the README on Redis persistence).

var (
	//go:embed outbox_add.lua
	outboxAddLua string
	//go:embed outbox_remove.lua
	outboxRemoveLua string

	outboxAdd    = redis.NewScript(outboxAddLua)
	outboxRemove = redis.NewScript(outboxRemoveLua)
)

// OutboxTeamsKey is the set of teams whose outbox may hold records: what a
// drain visits. A team is added after its record is kept, and removed only
// when a drain found its outbox empty after the removal, so no team with a
// record is ever missing from it.
const OutboxTeamsKey = "tokenbudget:spend:outbox:teams"

func outboxKey(team string) string      { return tag(team) + ":spend:outbox" }
func outboxOrderKey(team string) string { return tag(team) + ":spend:outbox:order" }
func outboxSumsKey(team string) string  { return tag(team) + ":spend:outbox:sums" }
func outboxLockKey(team string) string  { return tag(team) + ":spend:outbox:lock" }

func outboxKeys(team string) []string {
	return []string{outboxKey(team), outboxOrderKey(team), outboxSumsKey(team)}
}

// outboxRecord is a record as the outbox keeps it.
type outboxRecord struct {
	Team    string `json:"team"`
	APIKey  string `json:"api_key,omitempty"`
	User    string `json:"user,omitempty"`
	Model   string `json:"model"`
	Input   int64  `json:"in,omitempty"`
	Cached  int64  `json:"cached,omitempty"`
	Write   int64  `json:"write,omitempty"`
	Write1h int64  `json:"write_1h,omitempty"`
	Output  int64  `json:"out,omitempty"`
	Start   int64  `json:"start_unix_nano"`
	Est     int64  `json:"estimate"`
}

func encodeRecord(r *ledger.Record) ([]byte, error) {
	return json.Marshal(outboxRecord{Team: r.Team, APIKey: r.APIKey, User: r.User, Model: r.Model,
		Input: r.Usage.Input, Cached: r.Usage.CachedInput, Write: r.Usage.CacheWrite, Write1h: r.Usage.CacheWrite1h,
		Output: r.Usage.Output, Start: r.CallStart.UnixNano(), Est: int64(r.Estimate)})
}

func decodeRecord(id string, b []byte) (ledger.Record, error) {
	var o outboxRecord
	if err := json.Unmarshal(b, &o); err != nil {
		return ledger.Record{}, err
	}
	return ledger.Record{ID: id, Team: o.Team, APIKey: o.APIKey, User: o.User, Model: o.Model,
		Usage:     tokens.Kinds{Input: o.Input, CachedInput: o.Cached, CacheWrite: o.Write, CacheWrite1h: o.Write1h, Output: o.Output},
		CallStart: time.Unix(0, o.Start).UTC(), Estimate: money.Amount(o.Est)}, nil
}

// figureKeys are the counters a record adds to, as the worker's aggregates
// and the ledger's pending figures count them: its team's month, and its
// key's and user's day and month when it has them.
func figureKeys(r *ledger.Record) []ledger.FigureKey {
	day, month, ok := calendar.Both(r.CallStart.UnixNano())
	if !ok {
		return nil
	}
	ks := make([]ledger.FigureKey, 0, spend.NumSlots)
	for s := spend.Slot(0); s < spend.NumSlots; s++ {
		id := r.Team
		switch s.Scope() {
		case spend.APIKey:
			id = r.APIKey
		case spend.User:
			id = r.User
		}
		if id == "" {
			continue
		}
		w := month
		if s.Period() == calendar.Day {
			w = day
		}
		ks = append(ks, ledger.FigureKey{Scope: s.Scope(), ID: id, Period: w.Period, Key: w.Key})
	}
	return ks
}

// sumField is a counter's field of the sums hash; the id comes last, so
// any id reads back.
func sumField(k ledger.FigureKey) string {
	return k.Scope.String() + ":" + k.Period.String() + ":" + strconv.FormatUint(uint64(k.Key), 10) + ":" + k.ID
}

func parseSumField(f string) (k ledger.FigureKey, ok bool) {
	parts := strings.SplitN(f, ":", 4)
	if len(parts) != 4 {
		return k, false
	}
	switch parts[0] {
	case "team":
		k.Scope = spend.Team
	case "api_key":
		k.Scope = spend.APIKey
	case "user":
		k.Scope = spend.User
	default:
		return k, false
	}
	w, ok := calendar.ParseKey(parts[2])
	if !ok || w.Period.String() != parts[1] {
		return k, false
	}
	k.Period, k.Key, k.ID = w.Period, w.Key, parts[3]
	return k, true
}

// Keep puts a record the ledger could not take into its team's outbox.
// added is false when the outbox already held its hold id (a retried
// settlement): the caller runs the postflight only for an added record.
// The team is listed for the drain even then, so a retry also repairs a
// listing that failed after the record was kept.
func (c *Cache) Keep(ctx context.Context, r ledger.Record) (added bool, err error) {
	if r.Estimate < 0 || r.Estimate > maxEstimate {
		return false, errs.New("spendcache: estimate out of range")
	}
	body, err := encodeRecord(&r)
	if err != nil {
		return false, errs.Wrap("spend outbox", err)
	}
	ks := figureKeys(&r)
	args := make([]any, 0, 3+len(ks))
	args = append(args, r.ID, body, strconv.FormatInt(int64(r.Estimate), 10))
	for _, k := range ks {
		args = append(args, sumField(k))
	}
	n, err := outboxAdd.Run(ctx, c.c, outboxKeys(r.Team), args...).Int()
	if err != nil {
		return false, errs.Wrap("spend outbox of team "+strconv.Quote(r.Team), err)
	}
	if err := c.c.SAdd(ctx, OutboxTeamsKey, r.Team).Err(); err != nil {
		return false, errs.Wrap("spend outbox listing of team "+strconv.Quote(r.Team), err)
	}
	return n == 1, nil
}

// OutboxTeams lists the teams whose outbox may hold records.
func (c *Cache) OutboxTeams(ctx context.Context) ([]string, error) {
	teams, err := c.c.SMembers(ctx, OutboxTeamsKey).Result()
	if err != nil {
		return nil, errs.Wrap("spend outbox teams", err)
	}
	return teams, nil
}

// OutboxLen is how many records the team's outbox holds.
func (c *Cache) OutboxLen(ctx context.Context, team string) (int64, error) {
	n, err := c.c.HLen(ctx, outboxKey(team)).Result()
	if err != nil {
		return 0, errs.Wrap("spend outbox of team "+strconv.Quote(team), err)
	}
	return n, nil
}

// InOutbox reports whether the team's outbox holds the hold id's record:
// its postflight ran when it was kept.
func (c *Cache) InOutbox(ctx context.Context, team, id string) (bool, error) {
	ok, err := c.c.HExists(ctx, outboxKey(team), id).Result()
	if err != nil {
		return false, errs.Wrap("spend outbox of team "+strconv.Quote(team), err)
	}
	return ok, nil
}

// OutboxPending is what the team's outbox holds, per counter (every
// period) and in all: the estimates a load, a refresh or a spend report
// counts as pending beside the ledger's.
func (c *Cache) OutboxPending(ctx context.Context, team string) (figures map[ledger.FigureKey]money.Amount, all money.Amount, err error) {
	return OutboxPending(ctx, c.c, team)
}

// OutboxPending reads a team's outbox sums on c (see Cache.OutboxPending),
// for a reader without a cache (the admin API).
func OutboxPending(ctx context.Context, c redis.Cmdable, team string) (figures map[ledger.FigureKey]money.Amount, all money.Amount, err error) {
	m, err := c.HGetAll(ctx, outboxSumsKey(team)).Result()
	if err != nil {
		return nil, 0, errs.Wrap("spend outbox sums of team "+strconv.Quote(team), err)
	}
	for f, v := range m {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, 0, errs.New("spend outbox sums of team " + strconv.Quote(team) + ": field " + strconv.Quote(f) + " is not a number")
		}
		switch f {
		case "_all":
			all = money.Amount(n)
		case "_n", "_seq":
		default:
			if k, ok := parseSumField(f); ok && n != 0 {
				if figures == nil {
					figures = map[ledger.FigureKey]money.Amount{}
				}
				figures[k] = money.Amount(n)
			}
		}
	}
	return figures, all, nil
}

// snapshot is the ledger's snapshot of a team with the outbox counted as
// pending: figures gain what the outbox holds for them and the balance
// loses all of it. The outbox is read first: a drain moves a record into
// the ledger before it takes it out of the outbox, so a drain between the
// two reads can count a record twice (until the next refresh), never not
// at all.
func (c *Cache) snapshot(ctx context.Context, team string, periods []calendar.Window) (ledger.Snapshot, error) {
	figs, all, err := c.OutboxPending(ctx, team)
	if err != nil {
		return ledger.Snapshot{}, err
	}
	snap, err := c.l.Snapshot(ctx, team, periods)
	if err != nil {
		return snap, err
	}
	for k, v := range figs {
		for _, w := range periods {
			if k.Period == w.Period && k.Key == w.Key {
				snap.Figures[k] += v
			}
		}
	}
	if snap.HasBalance {
		snap.Balance -= all
	}
	return snap, nil
}

// ErrOutboxBusy is Drain's answer when another drain holds the team.
var ErrOutboxBusy = errors.New("spend outbox: another drain holds the team")

// outboxLockTTL bounds how long a drain that died holds its team.
const outboxLockTTL = 30 * time.Second

// Drain moves the team's outbox into the ledger, oldest first, batch
// records at a time: insert stores them (it must be idempotent by hold id,
// as the ledger's insert is, so a record that reached the ledger by
// another path, or in a drain that died before its removal, is stored
// once), then they leave the outbox. It stops at the first failed insert
// (the ledger is still down; nothing is lost) and, when the outbox is
// empty, takes the team off the drain's list. One drain per team at a
// time, fleet-wide (ErrOutboxBusy); bad, when not nil, is told of a kept
// record that cannot be read, which is dropped so it cannot block the rest.
func (c *Cache) Drain(ctx context.Context, team string, batch int, insert func(context.Context, []ledger.Record) error, bad func(id string, err error)) (moved int, left int64, err error) {
	if batch <= 0 {
		batch = 100
	}
	lock := outboxLockKey(team)
	ok, err := c.c.SetNX(ctx, lock, "1", outboxLockTTL).Result()
	if err != nil {
		return 0, 0, errs.Wrap("spend outbox lock of team "+strconv.Quote(team), err)
	}
	if !ok {
		return 0, 0, ErrOutboxBusy
	}
	defer c.c.Del(context.WithoutCancel(ctx), lock)
	keys := outboxKeys(team)
	for {
		ids, err := c.c.ZRange(ctx, keys[1], 0, int64(batch-1)).Result()
		if err != nil {
			return moved, left, errs.Wrap("spend outbox of team "+strconv.Quote(team), err)
		}
		if len(ids) == 0 {
			return moved, 0, c.unlist(ctx, team)
		}
		vals, err := c.c.HMGet(ctx, keys[0], ids...).Result()
		if err != nil {
			return moved, left, errs.Wrap("spend outbox of team "+strconv.Quote(team), err)
		}
		recs := make([]ledger.Record, 0, len(ids))
		args := make([]any, 0, len(ids)*8)
		for i, v := range vals {
			s, _ := v.(string)
			r, err := decodeRecord(ids[i], []byte(s))
			if v == nil || err != nil {
				if bad != nil {
					bad(ids[i], errors.Join(errors.New("unreadable outbox record"), err))
				}
				args = append(args, ids[i], "0", "0")
				continue
			}
			recs = append(recs, r)
			ks := figureKeys(&r)
			args = append(args, r.ID, strconv.FormatInt(-int64(r.Estimate), 10), strconv.Itoa(len(ks)))
			for _, k := range ks {
				args = append(args, sumField(k))
			}
		}
		if len(recs) > 0 {
			if err := insert(ctx, recs); err != nil {
				return moved, left, err
			}
		}
		left, err = outboxRemove.Run(ctx, c.c, keys, args...).Int64()
		if err != nil {
			return moved, left, errs.Wrap("spend outbox of team "+strconv.Quote(team), err)
		}
		moved += len(recs)
		c.c.PExpire(ctx, lock, outboxLockTTL)
	}
}

// unlist takes an empty outbox's team off the drain's list, then looks
// again: a record kept in between (its team is listed after it is kept)
// lists the team again, and so does this.
func (c *Cache) unlist(ctx context.Context, team string) error {
	if err := c.c.SRem(ctx, OutboxTeamsKey, team).Err(); err != nil {
		return errs.Wrap("spend outbox listing of team "+strconv.Quote(team), err)
	}
	n, err := c.OutboxLen(ctx, team)
	if err != nil {
		return err
	}
	if n > 0 {
		return c.c.SAdd(ctx, OutboxTeamsKey, team).Err()
	}
	return nil
}
