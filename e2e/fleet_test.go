package e2e

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/gateway"
	"github.com/tokenbudget/tokenbudget/examples/mockllm"
	"github.com/tokenbudget/tokenbudget/sharedstore/redistest"
)

// fleet is two local gateways (2 workers each) on two sharedstore replicas
// fronting one Redis: gateway A calls replica 1, gateway B replica 2.
type fleet struct {
	a, b   *gateway.Gateway
	r1, r2 *replica
}

func startFleet(t *testing.T, pluginConfig string) fleet {
	t.Helper()
	addr := redistest.Start(t)
	f := fleet{r1: startReplica(t, addr), r2: startReplica(t, addr)}
	f.a = startGateway(t, pluginConfig, withClusters(map[string]string{"sharedstore": f.r1.URL()}))
	f.b = startGateway(t, pluginConfig, withClusters(map[string]string{"sharedstore": f.r2.URL()}))
	return f
}

func (f fleet) gw(i int) *gateway.Gateway {
	if i%2 == 0 {
		return f.a
	}
	return f.b
}

func (f fleet) requireNoTraps(t *testing.T) {
	t.Helper()
	require.Empty(t, f.a.Host().Traps(), "gateway A trapped")
	require.Empty(t, f.b.Host().Traps(), "gateway B trapped")
}

// chatReq is a Chat Completions body; stream asks for server-sent events.
func chatReq(words string, maxTokens int, stream bool) string {
	s := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + words + `"}],"max_tokens":` + strconv.Itoa(maxTokens)
	if stream {
		s += `,"stream":true`
	}
	return s + "}"
}

// usageOf is what the mock reports for body when asked for out tokens:
// its input count plus the output, capped by the request's ceiling.
func usageOf(body string, out int64) int64 {
	return mockllm.InputTokens([]byte(body)) + min(out, mockllm.OutputCeiling([]byte(body)))
}

// A key's budget spent through gateway A is refused on gateway B: both
// gateways draw on the one Redis bucket, so the fleet enforces one budget,
// not one per gateway.
func TestFleetKeyBudgetSpentThroughOneGatewayIsRefusedOnTheOther(t *testing.T) {
	f := startFleet(t, fleetConfig(`{"per_api_key":{"tokens_per_minute":3000}}`, fleetToken, 2000, false))
	body := chatReq("spend it all", 1400, false)
	admitted := 0
	var refusedOnA resp
	for i := 0; i < 10; i++ {
		r := post(t, f.a, "/v1/chat/completions", "sk-one", body, "x-mock-output-tokens", "1400")
		if r.status == 429 {
			refusedOnA = r
			break
		}
		require.Equal(t, 200, r.status, string(r.body))
		require.Equal(t, "3000", r.header.Get("x-ratelimit-tokens-limit"))
		admitted++
	}
	require.Equal(t, 429, refusedOnA.status, "the key's budget runs out on A")
	require.Equal(t, 2, admitted, "3000 tokens hold two requests of 1400 (+ input) each, and refill cannot add a third")

	r := post(t, f.b, "/v1/chat/completions", "sk-one", body, "x-mock-output-tokens", "1400")
	require.Equal(t, 429, r.status, "B refuses the key A exhausted: %s", r.body)
	require.Equal(t, "api_key", r.details["token_dimension"])
	require.Equal(t, "minute", r.details["token_budget"])
	other := post(t, f.b, "/v1/chat/completions", "sk-two", body, "x-mock-output-tokens", "1400")
	require.Equal(t, 200, other.status, "another key still has its own budget: %s", other.body)
	require.Positive(t, f.r1.admitted())
	require.Positive(t, f.r2.admitted())
	f.requireNoTraps(t)
}

// Under concurrent load from many clients through both gateways (some
// streamed), the tokens the fleet lets a key consume never exceed its
// budget plus what refilled meanwhile.
func TestFleetAdmitsNoMoreThanTheBudgetPlusRefillUnderContention(t *testing.T) {
	const capacity, refillPerSec = 6000, 100.0 // tokens_per_minute 6000
	f := startFleet(t, fleetConfig(`{"per_api_key":{"tokens_per_minute":6000}}`, fleetToken, 2000, false))
	const workers, perWorker = 8, 40
	var mu sync.Mutex
	var consumed int64
	var admitted, refused [2]int
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < perWorker; j++ {
				body := chatReq("contended budget", 200, j%3 == 0)
				r := post(t, f.gw(w+j), "/v1/chat/completions", "sk-hot", body, "x-mock-output-tokens", "150")
				mu.Lock()
				switch r.status {
				case 200:
					admitted[(w+j)%2]++
					consumed += usageOf(body, 150)
				case 429:
					refused[(w+j)%2]++
				default:
					t.Errorf("status %d: %s", r.status, r.body)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	waitEnds(t, admitted[0]+admitted[1], f.r1, f.r2)
	elapsed := time.Since(start).Seconds()
	bound := capacity + refillPerSec*elapsed
	t.Logf("admitted A=%d B=%d, refused A=%d B=%d, consumed %d tokens in %.2fs (bound %.0f)",
		admitted[0], admitted[1], refused[0], refused[1], consumed, elapsed, bound)
	require.Positive(t, admitted[0])
	require.Positive(t, admitted[1])
	require.Positive(t, refused[0]+refused[1], "the load must exhaust the budget")
	require.LessOrEqual(t, float64(consumed), bound, "the fleet never lets a key consume more than its budget plus refill")
	f.requireNoTraps(t)
}

// After concurrent load through both gateways, once every stream has ended
// and every settlement has landed, each Redis bucket's day level is exactly
// its level after a warm-up request, minus the usage the backend reported
// for every later request, plus the refill over the Redis clock between the
// two touches: no hold leaked, none ended twice, no usage lost.
//
// The day period is checked because its exact refill can be computed from
// the hash's own timestamps as long as the bucket never refills to full:
// the warm-up spends far more than the day refill over the run (its rate is
// capacity/86400 per second), so no touch is capped.
func TestFleetBucketsMatchSettledUsageExactlyAfterConcurrentLoad(t *testing.T) {
	const keyDay, globalDay = 200000, 1000000
	limits := `{"global":{"tokens_per_minute":10000000,"tokens_per_day":1000000},` +
		`"per_api_key":{"tokens_per_minute":1000000,"tokens_per_day":200000}}`
	f := startFleet(t, fleetConfig(limits, fleetToken, 2000, false))
	keys := []string{"sk-k0", "sk-k1", "sk-k2", "sk-k3"}
	rdb := f.r1.rdb

	// Warm-up: one large request per key, sequential, so every bucket
	// exists and sits far below capacity before the timed part starts.
	warm := chatReq("warm up", 600, false)
	for i, k := range keys {
		r := post(t, f.gw(i), "/v1/chat/completions", k, warm, "x-mock-output-tokens", "600")
		require.Equal(t, 200, r.status, string(r.body))
	}
	waitEnds(t, len(keys), f.r1, f.r2)
	before := map[string]bucketState{}
	for _, k := range keys {
		before[k] = readBucket(t, rdb, "api_key", k, "day")
		require.True(t, before[k].exists)
	}
	globalBefore := readBucket(t, rdb, "global", "", "day")
	require.True(t, globalBefore.exists)

	const workers, perWorker = 8, 40
	var mu sync.Mutex
	spent := map[string]int64{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := keys[w%len(keys)]
			for j := 0; j < perWorker; j++ {
				out := int64(j%7)*10 + 5
				body := chatReq("load "+strconv.Itoa(j%5)+" words here", 100, j%3 == 0)
				r := post(t, f.gw(w+j), "/v1/chat/completions", key, body, "x-mock-output-tokens", strconv.FormatInt(out, 10))
				if r.status != 200 {
					t.Errorf("status %d: %s", r.status, r.body)
					continue
				}
				mu.Lock()
				spent[key] += usageOf(body, out)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.False(t, t.Failed())
	waitEnds(t, len(keys)+workers*perWorker, f.r1, f.r2)

	check := func(name string, capacity float64, b0, b1 bucketState, used int64) {
		t.Helper()
		require.True(t, b1.exists)
		refill := capacity / 86400 * float64(b1.lastUs-b0.lastUs) / 1e6
		want := b0.level - float64(used) + refill
		require.Less(t, want, capacity, "%s: never refilled to full, so no touch was capped", name)
		require.InDelta(t, want, b1.level, 1e-6*capacity, "%s: day level = warm-up level - settled usage + refill (%.3f over %.3fs)",
			name, refill, float64(b1.lastUs-b0.lastUs)/1e6)
	}
	var total int64
	for _, k := range keys {
		check(k, keyDay, before[k], readBucket(t, rdb, "api_key", k, "day"), spent[k])
		total += spent[k]
	}
	check("global", globalDay, globalBefore, readBucket(t, rdb, "global", "", "day"), total)
	require.Positive(t, f.r1.admitted())
	require.Positive(t, f.r2.admitted())
	f.requireNoTraps(t)
}
