package wasmtest

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host"
	"github.com/tokenbudget/tokenbudget/shared/metrics"
)

// fleetFallbackConfig is a fleet deployment whose store this replica cannot
// reach; division is "" or a budget_division member.
func fleetFallbackConfig(division string) string {
	return `{
  "rate_limiting": {
    "storage": "redis",
    "redis": { "cluster": "sharedstore", "timeout_ms": 200, "fallback_to_memory": true },
    ` + division + `
    "limits": { "per_api_key": { "tokens_per_minute": 10000, "tokens_per_day": 1000000 } }
  }
}`
}

// closedPort is a local address nothing listens on: a store that refuses
// every connection.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

// TestAReplicaInFallbackAdmitsOnlyItsShare: with the store down, a replica
// admits on its own buckets; with budget_division.replicas those buckets
// hold one replica's share of the fleet budget, so the fleet as a whole
// admits about the budget rather than the budget on every replica.
func TestAReplicaInFallbackAdmitsOnlyItsShare(t *testing.T) {
	cases := []struct {
		name     string
		division string
		limit    int64
		dayLimit int64
	}{
		{"the hint sizes the fallback buckets", `"budget_division": { "replicas": 4 },`, 2500, 250000},
		{"without a division source each replica has the whole budget", ``, 10000, 1000000},
	}
	stores := []struct {
		name     string
		clusters func(t *testing.T) map[string]string
	}{
		{"the host knows no such cluster", func(*testing.T) map[string]string { return map[string]string{} }},
		{"the store refuses connections", func(t *testing.T) map[string]string {
			return map[string]string{"sharedstore": closedPort(t)}
		}},
	}
	for _, st := range stores {
		for _, c := range cases {
			t.Run(st.name+"/"+c.name, func(t *testing.T) {
				x := newHarness(t, fleetFallbackConfig(c.division), withClusters(st.clusters(t)))
				body := chatBody("hello", 500)
				var admitted, served int64
				var last reply
				for i := 0; i < 40; i++ {
					last = x.do(call{key: "sk-fallback", body: body, chunks: []string{chatResponse(20, 480)}})
					if last.status != 200 {
						break
					}
					require.Equal(t, itoa(int(c.limit)), last.header("x-ratelimit-tokens-limit"), "the fallback bucket's capacity")
					require.Equal(t, itoa(int(c.dayLimit)), last.header("x-ratelimit-tokens-day-limit"))
					admitted++
					served += 500
				}
				require.Equal(t, 429, last.status, "the fallback bucket refuses once spent: %s", last.body)
				require.Positive(t, admitted)
				require.LessOrEqual(t, served, c.limit, "never more than the replica's bucket")
				require.Greater(t, served+600, c.limit, "the bucket was used up to its last request")
				require.Equal(t, admitted+1, x.metric(metrics.RedisUnavailable, metrics.LabelDimension, "api_key", metrics.LabelAction, "fallback"),
					"every admission went to the fallback")
			})
		}
	}
}

// asReplica gives the host its own vm_id: hosts of one process share the
// proxy shared data of a vm_id, as the VMs of one Envoy do, so a second
// replica (another Envoy) needs another.
func asReplica(vmID string) hopt { return func(o *host.Options) { o.VMID = vmID } }

// TestTwoReplicasInFallbackShareTheFleetBudget replays the outage the issue
// measured (two gateways, the store down): with the hint each replica
// holds half the budget, so the two together serve at most the fleet
// budget, where without it they served almost twice that.
func TestTwoReplicasInFallbackShareTheFleetBudget(t *testing.T) {
	for _, c := range []struct {
		name     string
		division string
		most     int64
	}{
		{"divided", `"budget_division": { "replicas": 2 },`, 10000},
		{"undivided", ``, 20000},
	} {
		t.Run(c.name, func(t *testing.T) {
			replicas := []*harness{
				newHarness(t, fleetFallbackConfig(c.division), withClusters(map[string]string{}), asReplica("replica-a")),
				newHarness(t, fleetFallbackConfig(c.division), withClusters(map[string]string{}), asReplica("replica-b")),
			}
			body := chatBody("hello", 500)
			var served int64
			for i := 0; i < 100; i++ {
				r := replicas[i%2].do(call{key: "sk-fleet", body: body, chunks: []string{chatResponse(20, 480)}})
				if r.status == 200 {
					served += 500
				}
			}
			require.LessOrEqual(t, served, c.most)
			require.Greater(t, served, c.most-2*600, "each replica spent its bucket")
			t.Logf("%s: the two replicas served %d tokens of a 10000 fleet budget (%.2fx)", c.name, served, float64(served)/10000)
		})
	}
}
