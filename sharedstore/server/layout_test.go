package server

import (
	"context"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// cmdCalls is how many times the server has run each command (scripts'
// calls included), by lower-case name.
func cmdCalls(t *testing.T, e env) map[string]int64 {
	t.Helper()
	info, err := e.c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, stats, _ := strings.Cut(rest, ":calls=")
		n, err := strconv.ParseInt(stats[:strings.IndexByte(stats, ',')], 10, 64)
		require.NoError(t, err)
		out[name] = n
	}
	return out
}

func TestAnAdmissionReadsEveryBucketWithOneMGETAndWritesEachWithOneSET(t *testing.T) {
	e := newEnv(t, false)
	p := sixDimensionPlan(uniq("six"), 100)
	require.True(t, admit(t, e, p).Admitted()) // warm: the buckets exist
	before := cmdCalls(t, e)
	require.True(t, admit(t, e, p).Admitted())
	after := cmdCalls(t, e)
	diff := func(name string) int64 { return after[name] - before[name] }
	require.Equal(t, int64(1), diff("mget"), "one read for the plan's seven buckets")
	require.Equal(t, int64(8), diff("set"), "one SET … PX per bucket, one for the hold record")
	for _, name := range []string{"hmget", "hset", "pexpire", "get"} {
		require.Zero(t, diff(name), name)
	}
}

func TestABucketInTheHashLayoutOfThePreviousReleaseIsCarriedOverNotForgotten(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	tk := uniq("tk")
	l, d := minute(1000), day(5000)
	// what the previous release left: 700 of the minute and 4000 of the day spent
	nowUs := strconv.FormatInt(time.Now().UnixMicro(), 10)
	require.NoError(t, e.c.HSet(ctx, bucketKey(tk), "l:minute", "300", "t:minute", nowUs, "l:day", "1000", "t:day", nowUs, "x", "0").Err())
	o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 100, l, d)}})
	require.True(t, o.Admitted())
	require.InDelta(t, 200, level(t, e, tk, l), 0.5, "the minute level carries on from the hash")
	require.InDelta(t, 900, level(t, e, tk, d), 0.5, "the day level carries on from the hash")
	typ, err := e.c.Type(ctx, bucketKey(tk)).Result()
	require.NoError(t, err)
	require.Equal(t, "string", typ, "the bucket is rewritten in the new layout")
	require.False(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 300, l, d)}}).Admitted(),
		"a spent day budget stays spent across the upgrade")
}

// firstPackedRecord is a hold record as the first packed layout wrote it:
// limits named by their hash fields.
func firstPackedRecord(skip bool, key string, amount int64, ls ...limit.Limit) string {
	b := []byte{0, 1}
	if skip {
		b[0] = 1
	}
	b = binary.LittleEndian.AppendUint16(b, uint16(len(key)))
	b = append(b, key...)
	b = append(b, byte(limit.KindTokens))
	b = appendDouble(b, float64(amount))
	b = append(b, byte(len(ls)))
	for _, l := range ls {
		for _, f := range []string{"l:", "t:"} {
			b = append(b, byte(len(f)+len(l.Budget.String())))
			b = append(b, f+l.Budget.String()...)
		}
		b = appendDoubles(b, float64(l.Capacity), l.RefillPerSec)
	}
	return string(b)
}

func TestAHoldOfTheFirstPackedLayoutStillSettlesUnderItsRule(t *testing.T) {
	for _, c := range []struct {
		name string
		skip bool
		want float64
	}{
		{"debt charges the whole overage", false, -200},
		{"skip consumes nothing it cannot cover", true, 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false)
			ctx := context.Background()
			tk := uniq("tk")
			l := minute(500)
			o := admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 400, l)}})
			require.True(t, o.Admitted())
			rec := firstPackedRecord(c.skip, bucketKey(tk), 400, l)
			require.NoError(t, e.c.Set(ctx, holdKey(o.Hold.ID), rec, time.Hour).Err())
			ended, err := e.store.Settle(ctx, o.Hold.ID, []string{tk}, 700)
			require.NoError(t, err)
			require.True(t, ended)
			require.InDelta(t, c.want, level(t, e, tk, l), 0.5)
		})
	}
}

func TestAReloadThatAddsOrReordersPeriodsKeepsEachLevelItKept(t *testing.T) {
	for _, e := range envs(t) {
		t.Run(e.name, func(t *testing.T) {
			tk := uniq("tk")
			m, d := minute(1000), day(5000)
			require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 300, m)}}).Admitted())
			require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 100, d, m)}}).Admitted())
			require.InDelta(t, 600, level(t, e, tk, m), 0.5, "the minute kept its level")
			require.InDelta(t, 4900, level(t, e, tk, d), 0.5, "the new day period starts full")
			require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 100, m)}}).Admitted())
			require.InDelta(t, 500, level(t, e, tk, m), 0.5, "a period dropped again leaves the other one exact")
		})
	}
}

func TestDecodeBucketReadsWhatTheScriptsStore(t *testing.T) {
	for _, c := range []struct {
		name string
		v    string
		want map[limit.Period]StoredLimit
		err  bool
	}{
		{"two periods", string(appendDoubles(append(appendDoubles([]byte{byte(limit.PeriodMinute)}, 12.5, 1e15), byte(limit.PeriodDay)), -3, 1e15+1)),
			map[limit.Period]StoredLimit{limit.PeriodMinute: {12.5, 1e15}, limit.PeriodDay: {-3, 1e15 + 1}}, false},
		{"empty", "", map[limit.Period]StoredLimit{}, false},
		{"a torn period", "\x02abc", nil, true},
		{"an unknown period code", string(appendDoubles([]byte{9}, 1, 2)), nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeBucket(c.v)
			if c.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func FuzzDecodeBucket(f *testing.F) {
	f.Add(string(appendDoubles([]byte{byte(limit.PeriodMinute)}, 1, 2)))
	f.Add("")
	f.Add("\x00")
	f.Fuzz(func(t *testing.T, v string) {
		got, err := DecodeBucket(v)
		if err != nil {
			require.Nil(t, got)
			return
		}
		require.LessOrEqual(t, len(got), len(v)/storedLimitSize)
		for p := range got {
			require.True(t, p.Valid())
		}
	})
}
