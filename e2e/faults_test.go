package e2e

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
)

const (
	faultKeyDay    = 200000
	faultGlobalDay = 1000000
	faultLimits    = `{"global":{"tokens_per_minute":10000000,"tokens_per_day":1000000},` +
		`"per_api_key":{"tokens_per_minute":1000000,"tokens_per_day":200000}}`
	// faultTimeoutMs is generous for a loaded test machine; the slow store
	// sleeps well past it.
	faultTimeoutMs = 1000
	faultSlowSleep = 3 * time.Second
)

// faultRig is one gateway on one replica on a restartable Redis.
type faultRig struct {
	t        *testing.T
	redis    *redisServer
	r        *replica
	g        *gateway.Gateway
	fallback bool
}

// fault injects one kind of store failure and later recovers from it.
type fault struct {
	name    string
	inject  func(*faultRig)
	recover func(*faultRig)
	check   func(*faultRig) // optional: evidence the fault really happened
	// keepsStore is true when the fault leaves the store that admitted the
	// open stream working (a reload with a bad token makes a new store; the
	// stream settles on the one that admitted it).
	keepsStore bool
	// failsOnRedis is true when the stream's settlement reaches the
	// replica and fails there (rather than never connecting).
	failsOnRedis bool
}

var faults = []fault{
	{
		name:         "redis stopped then restarted",
		failsOnRedis: true,
		inject:       func(f *faultRig) { f.redis.Stop() },
		recover:      func(f *faultRig) { f.redis.Restart() },
		check: func(f *faultRig) {
			require.Positive(f.t, counterSum(f.t, f.r.reg, "tokenbudget_sharedstore_redis_errors_total", nil), "the replica saw Redis down")
		},
	},
	{
		name:    "sharedstore replica stopped then restarted",
		inject:  func(f *faultRig) { f.r.Stop() },
		recover: func(f *faultRig) { f.r.Restart() },
	},
	{
		name:         "store slower than timeout_ms",
		failsOnRedis: true,
		inject:       func(f *faultRig) { f.r.slow.Store(int64(faultSlowSleep)) },
		recover:      func(f *faultRig) { f.r.slow.Store(0) },
	},
	{
		name:       "wrong store token (401)",
		keepsStore: true,
		inject: func(f *faultRig) {
			require.NoError(f.t, f.g.Reload([]byte(fleetConfig(faultLimits, "not-the-token", faultTimeoutMs, f.fallback))))
		},
		recover: func(f *faultRig) {
			require.NoError(f.t, f.g.Reload([]byte(fleetConfig(faultLimits, fleetToken, faultTimeoutMs, f.fallback))))
		},
		check: func(f *faultRig) {
			require.Positive(f.t, counterSum(f.t, f.r.reg, "tokenbudget_sharedstore_requests_total", map[string]string{"outcome": "unauthorized"}),
				"the replica answered 401")
		},
	},
}

// openStream starts a streamed request and returns once its first event
// arrived, so its admission (a Redis hold) is certainly done.
func openStream(t *testing.T, g *gateway.Gateway, key, body string, hdr ...string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+g.Addr()+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("content-type", "application/json")
	req.Header.Set("authorization", "Bearer "+key)
	for i := 1; i < len(hdr); i += 2 {
		req.Header.Set(hdr[i-1], hdr[i])
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = res.Body.Close() })
	require.Equal(t, 200, res.StatusCode)
	br := bufio.NewReader(res.Body)
	_, err = br.ReadString('\n')
	require.NoError(t, err)
	return res, br
}

// For every store failure and both fallback_to_memory settings: during the
// fault, requests are admitted on the replica-local buckets (true) or
// refused 503 with Retry-After: 5 (false), and counted on
// rate_limit_redis_unavailable_total per dimension; nothing traps. After
// recovery the Redis buckets equal their level before the fault minus the
// usage settled remotely (plus refill): outage-time holds ended locally and
// never touched Redis, and a stream admitted before the fault but ended
// during it was settled later by the remote store's on_tick retry.
func TestFaultStoreFailuresFallBackOrRejectAsConfiguredAndLeakNoHold(t *testing.T) {
	for _, fb := range []bool{true, false} {
		for _, fl := range faults {
			t.Run(fl.name+"/fallback_to_memory="+strconv.FormatBool(fb), func(t *testing.T) {
				runFault(t, fl, fb)
			})
		}
	}
}

func runFault(t *testing.T, fl fault, fallback bool) {
	f := &faultRig{t: t, redis: startRedisServer(t), fallback: fallback}
	f.r = startReplica(t, f.redis.Addr())
	f.g = startGateway(t, fleetConfig(faultLimits, fleetToken, faultTimeoutMs, fallback),
		withClusters(map[string]string{"sharedstore": f.r.URL()}))
	// A key of its own per sub-test: the gateways of one test process share
	// the per-Envoy shared data of their vm_id while any of them is open, so
	// a key an earlier sub-test charged on the local buckets is not on a
	// fresh one if that gateway has not let go yet (a clean-clone CI run
	// once found the first fallback request's bucket 712 tokens short of
	// what a fresh bucket shows).
	key := "sk-fault-" + t.Name()
	rdb := f.r.rdb

	// Before the fault: a large remote spend, so the Redis buckets sit far
	// below capacity (no refill can cap them) and well below a fresh local
	// bucket.
	warm := chatReq("warm up", 600, false)
	w := post(t, f.g, "/v1/chat/completions", key, warm, "x-mock-output-tokens", "600")
	require.Equal(t, 200, w.status, string(w.body))
	remoteDayRemaining := atoi(t, w.header.Get("x-ratelimit-tokens-day-remaining"))
	require.Less(t, remoteDayRemaining, int64(faultKeyDay-600))
	waitEnds(t, 1, f.r)
	keyBefore := readBucket(t, rdb, "api_key", key, "day")
	globalBefore := readBucket(t, rdb, "global", "", "day")
	require.True(t, keyBefore.exists && globalBefore.exists)

	// A stream admitted remotely that ends during the fault.
	sBody := chatReq("stream across the fault", 40, true)
	sRes, sRd := openStream(t, f.g, key, sBody, "x-mock-output-tokens", "20", "x-mock-chunk-delay-ms", "40")

	fl.inject(f)
	_, err := io.Copy(io.Discard, sRd)
	require.NoError(t, err, "the stream admitted before the fault completes")
	_ = sRes.Body.Close()

	// Requests during the fault.
	oBody := chatReq("during the fault", 100, false)
	var dayRemaining []int64
	for i := 0; i < 2; i++ {
		r := post(t, f.g, "/v1/chat/completions", key, oBody, "x-mock-output-tokens", "50")
		if fallback {
			require.Equal(t, 200, r.status, "fallback admits locally: %s", r.body)
			dayRemaining = append(dayRemaining, atoi(t, r.header.Get("x-ratelimit-tokens-day-remaining")))
			require.Equal(t, strconv.Itoa(faultKeyDay), r.header.Get("x-ratelimit-tokens-day-limit"))
		} else {
			require.Equal(t, 503, r.status, string(r.body))
			require.Equal(t, "5", r.header.Get("retry-after"))
			require.Contains(t, string(r.body), "rate_limit_store_unavailable")
		}
	}
	action := "reject"
	if fallback {
		action = "fallback"
		// A fresh local bucket, not the Redis one the warm-up drained.
		require.Greater(t, dayRemaining[0], int64(faultKeyDay-200), "headers come from the local bucket")
		require.Greater(t, dayRemaining[0], remoteDayRemaining)
		require.Less(t, dayRemaining[1], dayRemaining[0], "the local bucket carries the first fallback request's usage")
	}
	for _, dim := range []string{"global", "api_key"} {
		require.Equal(t, int64(2), promValue(t, f.g, `rate_limit_redis_unavailable_total{dimension="`+dim+`",action="`+action+`"}`), dim)
	}
	other := map[string]string{"fallback": "reject", "reject": "fallback"}[action]
	require.Zero(t, promValue(t, f.g, `rate_limit_redis_unavailable_total{dimension="api_key",action="`+other+`"}`))
	if fl.check != nil {
		fl.check(f)
	}

	if fl.failsOnRedis {
		waitSettleFailed(t, f.r)
	}
	if !fl.keepsStore {
		require.Equal(t, 1, f.r.ends(), "the stream's settlement has not reached Redis during the fault")
	}
	fl.recover(f)
	waitEnds(t, 2, f.r) // the warm-up and the stream: the stream's settlement was retried after recovery
	p := post(t, f.g, "/v1/chat/completions", key, oBody, "x-mock-output-tokens", "50")
	require.Equal(t, 200, p.status, "after recovery: %s", p.body)
	require.Less(t, atoi(t, p.header.Get("x-ratelimit-tokens-day-remaining")), int64(faultKeyDay-600), "admitted on Redis again")
	waitEnds(t, 3, f.r)

	remote := usageOf(sBody, 20) + usageOf(oBody, 50)
	expectDay := func(name string, capacity float64, b0, b1 bucketState) {
		t.Helper()
		require.True(t, b1.exists)
		refill := capacity / 86400 * float64(b1.lastUs-b0.lastUs) / 1e6
		want := b0.level - float64(remote) + refill
		require.Less(t, want, capacity)
		require.InDelta(t, want, b1.level, 1e-6*capacity,
			"%s: level before the fault - usage settled remotely + refill; outage-time holds never reached Redis", name)
	}
	expectDay("api_key", faultKeyDay, keyBefore, readBucket(t, rdb, "api_key", key, "day"))
	expectDay("global", faultGlobalDay, globalBefore, readBucket(t, rdb, "global", "", "day"))
	require.Empty(t, f.g.Host().Traps(), "no trap")
}

// A settlement that fails because the store is down is retried from on_tick
// until the store is back, even when a config reload retired the root
// context that admitted the stream in the meantime: the hold must not be
// lost with the old root (a settlement may be lost only when the retry
// window runs out).
func TestFaultSettlementPendingAcrossAReloadIsRetriedAfterRecovery(t *testing.T) {
	f := &faultRig{t: t, redis: startRedisServer(t), fallback: true}
	f.r = startReplica(t, f.redis.Addr())
	cfg := fleetConfig(faultLimits, fleetToken, faultTimeoutMs, true)
	f.g = startGateway(t, cfg, withClusters(map[string]string{"sharedstore": f.r.URL()}))
	const key = "sk-reload"
	rdb := f.r.rdb

	warm := chatReq("warm up", 600, false)
	require.Equal(t, 200, post(t, f.g, "/v1/chat/completions", key, warm, "x-mock-output-tokens", "600").status)
	waitEnds(t, 1, f.r)
	before := readBucket(t, rdb, "api_key", key, "day")
	require.True(t, before.exists)

	sBody := chatReq("stream across a reload", 40, true)
	sRes, sRd := openStream(t, f.g, key, sBody, "x-mock-output-tokens", "20", "x-mock-chunk-delay-ms", "40")
	f.redis.Stop()
	require.NoError(t, f.g.Reload([]byte(cfg)), "the same config again: a new root context per worker")
	_, err := io.Copy(io.Discard, sRd)
	require.NoError(t, err)
	_ = sRes.Body.Close()
	waitSettleFailed(t, f.r)
	require.Equal(t, 1, f.r.ends(), "the stream's settlement failed while Redis was down")
	f.redis.Restart()

	waitEnds(t, 2, f.r)
	after := readBucket(t, rdb, "api_key", key, "day")
	refill := float64(faultKeyDay) / 86400 * float64(after.lastUs-before.lastUs) / 1e6
	require.InDelta(t, before.level-float64(usageOf(sBody, 20))+refill, after.level, 1e-6*faultKeyDay)
	require.Empty(t, f.g.Host().Traps())
}

// waitSettleFailed waits until the replica answered a settlement with a
// Redis error, so a recovery after it can only be seen through a retry.
func waitSettleFailed(t *testing.T, r *replica) {
	t.Helper()
	require.True(t, waitFor(10*time.Second, func() bool {
		return counterSum(t, r.reg, "tokenbudget_sharedstore_requests_total", map[string]string{"operation": "settle", "outcome": "redis_error"}) >= 1
	}), "a settlement reached the replica and failed on Redis")
}

// An admission that Redis committed but whose answer came after timeout_ms
// must not leave its reservation in Redis: the filter treated the store as
// unavailable (503 here, or a local admission under fallback), so nothing
// will ever settle or release that remote hold, and the budget would stay
// short by the reservation until refill returns it.
func TestFaultAdmissionCommittedAfterTheTimeoutLeavesNoReservationInRedis(t *testing.T) {
	f := &faultRig{t: t, redis: startRedisServer(t), fallback: false}
	f.r = startReplica(t, f.redis.Addr())
	f.g = startGateway(t, fleetConfig(faultLimits, fleetToken, faultTimeoutMs, false),
		withClusters(map[string]string{"sharedstore": f.r.URL()}))
	const key = "sk-late"
	rdb := f.r.rdb
	warm := chatReq("warm up", 600, false)
	require.Equal(t, 200, post(t, f.g, "/v1/chat/completions", key, warm, "x-mock-output-tokens", "600").status)
	waitEnds(t, 1, f.r)
	before := readBucket(t, rdb, "api_key", key, "day")
	require.True(t, before.exists)

	f.r.lateReply.Store(int64(2 * faultTimeoutMs * time.Millisecond))
	r := post(t, f.g, "/v1/chat/completions", key, chatReq("late answer", 100, false), "x-mock-output-tokens", "50")
	require.Equal(t, 503, r.status, "the filter gave up on the store")
	require.True(t, waitFor(10*time.Second, func() bool { return f.r.admitted() == 2 }), "Redis committed the admission anyway")
	f.r.lateReply.Store(0)
	var after bucketState
	var refill float64
	waitFor(5*time.Second, func() bool { // give a compensating release time to land
		after = readBucket(t, rdb, "api_key", key, "day")
		refill = float64(faultKeyDay) / 86400 * float64(after.lastUs-before.lastUs) / 1e6
		return after.level > before.level-1
	})
	require.InDelta(t, min(before.level+refill, faultKeyDay), after.level, 1e-6*faultKeyDay,
		"a hold the filter never learned of is released, not left in the bucket")
	require.Empty(t, f.g.Host().Traps())
}
