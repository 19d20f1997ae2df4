package server

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/limit"
)

// calls is how many times Redis has run command name (INFO commandstats).
func calls(t *testing.T, c redis.UniversalClient, name string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^cmdstat_` + name + `:calls=(\d+),`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	return n
}

// formsRun counts the admissions Redis ran as functions and as scripts
// while f ran.
func formsRun(t *testing.T, c redis.UniversalClient, f func()) (fcalls, evalshas int64) {
	t.Helper()
	f0, e0 := calls(t, c, "fcall"), calls(t, c, "evalsha")
	f()
	return calls(t, c, "fcall") - f0, calls(t, c, "evalsha") - e0
}

func TestASingleServerRunsAdmissionsAsTheLibrarysFunctions(t *testing.T) {
	e := newEnv(t, false)
	libs, err := e.c.Do(context.Background(), "function", "list", "libraryname", e.store.lib.name).Slice()
	require.NoError(t, err)
	require.Len(t, libs, 1, "Load put the library into Redis")
	require.NoError(t, e.store.FunctionsRefused())
	tk := uniq("tk")
	l := minute(1000)
	fcalls, evalshas := formsRun(t, e.c, func() {
		require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}).Admitted())
	})
	require.Equal(t, int64(1), fcalls)
	require.Zero(t, evalshas)
	require.InDelta(t, 990, level(t, e, tk, l), 0.5)
	var o limit.Outcome
	fcalls, evalshas = formsRun(t, e.c, func() {
		o = admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}})
		ended, err := e.store.Settle(context.Background(), o.Hold.ID, []string{tk}, 4)
		require.NoError(t, err)
		require.True(t, ended)
	})
	require.Equal(t, int64(2), fcalls, "the settlement is a function too")
	require.Zero(t, evalshas)
	require.InDelta(t, 986, level(t, e, tk, l), 0.5)
}

func TestALostLibraryCostsNoAdmissionAndIsLoadedAgain(t *testing.T) {
	e := newEnv(t, false)
	ctx := context.Background()
	tk := uniq("tk")
	l := minute(1000)
	p := limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}
	require.NoError(t, e.c.FunctionFlush(ctx).Err())
	fcalls, evalshas := formsRun(t, e.c, func() { require.True(t, admit(t, e, p).Admitted()) })
	require.Equal(t, int64(1), fcalls, "the call found its function missing")
	require.Equal(t, int64(1), evalshas, "and ran as the script instead")
	fcalls, evalshas = formsRun(t, e.c, func() { require.True(t, admit(t, e, p).Admitted()) })
	require.Equal(t, int64(1), fcalls, "the next batch loaded the library again")
	require.Zero(t, evalshas)
	require.InDelta(t, 1000-2*10, level(t, e, tk, l), 0.5, "each admission took its tokens exactly once")
}

func TestWhereFunctionsAreRefusedAdmissionsRunAsScripts(t *testing.T) {
	single, _ := redisServers(t)
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: single})
	t.Cleanup(func() { _ = admin.Close() })
	user := strings.ReplaceAll(uniq("nofunctions"), ":", "_")
	require.NoError(t, admin.Do(ctx, "acl", "setuser", user, "on", ">"+user, "~*", "&*", "+@all", "-function|load").Err())
	t.Cleanup(func() { _ = admin.Do(ctx, "acl", "deluser", user).Err() })

	c := redis.NewClient(&redis.Options{Addr: single, Username: user, Password: user})
	t.Cleanup(func() { _ = c.Close() })
	s := NewBuckets(c, Options{})
	require.NoError(t, s.Load(ctx), "a refused library is no error: the scripts serve")
	require.ErrorContains(t, s.FunctionsRefused(), "NOPERM", "the refusal is there for the service's log")
	e := env{name: "single", store: s, c: c, rt: &roundTrips{}}
	tk := uniq("tk")
	l := minute(1000)
	fcalls, evalshas := formsRun(t, admin, func() {
		require.True(t, admit(t, e, limit.Plan{Tokens: []limit.Op{tokOp(tk, "api_key", 10, l)}}).Admitted())
	})
	require.Zero(t, fcalls)
	require.Equal(t, int64(1), evalshas)
	require.InDelta(t, 990, level(t, e, tk, l), 0.5)
}

func TestOnlyALastingRefusalKeepsTheLibraryOut(t *testing.T) {
	for reply, lasting := range map[string]bool{
		"ERR unknown command 'function', with args beginning with: 'load'":       true,
		"NOPERM this user has no permissions to run the 'function|load' command": true,
		"ERR Error compiling function: user_function:1: unexpected symbol":       true,
		"LOADING Redis is loading the dataset in memory":                         false,
		"BUSY Redis is busy running a script":                                    false,
		"MASTERDOWN Link with MASTER is down":                                    false,
		"READONLY You can't write against a read only replica.":                  false,
		"TRYAGAIN Multiple keys request during rehashing of slot":                false,
	} {
		require.Equal(t, !lasting, transient(errors.New(reply)), reply)
	}
}
