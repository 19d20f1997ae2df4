package e2e

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/envoy/host/wasmbuild"
)

// Three tiers of keys hammer the gateway at once; each is held to its own
// request-rate limits (tiers.json: free inherits burst 5, pro 10, enterprise
// 100), and nobody's traffic moves anybody else's bucket.
func TestE2EThreeTiersAtOnceAreEachHeldToTheirOwnLimits(t *testing.T) {
	root, err := wasmbuild.Root()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "examples", "configs", "tiers.json"))
	require.NoError(t, err)
	// The example is used as shipped: its whitelist must not cover this test's loopback clients.
	g := startGateway(t, string(raw), withClock(&frozenClock{t: time.Unix(1_800_000_000, 0)}))

	keys := map[string]int{"sk-free-demo": 5, "sk-pro-demo": 10, "sk-enterprise-demo": 30}
	const perKey = 30
	var mu sync.Mutex
	admitted := map[string]int{}
	refusedAs := map[string]map[string]int{}
	var wg sync.WaitGroup
	for key := range keys {
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(key string) {
				defer wg.Done()
				for i := 0; i < perKey/3; i++ {
					r := post(t, g, "/v1/chat/completions", key, chat(100), "x-mock-output-tokens", "20")
					mu.Lock()
					switch r.status {
					case 200:
						admitted[key]++
					case 429:
						if refusedAs[key] == nil {
							refusedAs[key] = map[string]int{}
						}
						refusedAs[key][r.details["limit_type"].(string)]++
					default:
						t.Errorf("%s: unexpected %d %s", key, r.status, r.body)
					}
					mu.Unlock()
				}
			}(key)
		}
	}
	wg.Wait()
	for key, want := range keys {
		require.Equal(t, want, admitted[key], "%s admitted", key)
		if want < perKey {
			require.Equal(t, map[string]int{"requests_per_second": perKey - want}, refusedAs[key], key)
		}
	}
	// Each tier's headers report its own limits.
	ent := post(t, g, "/v1/chat/completions", "sk-enterprise-demo", chat(100))
	require.Equal(t, "100", ent.header.Get("x-ratelimit-limit"))
	require.Equal(t, "1000", ent.header.Get("x-ratelimit-requests-minute-limit"))
	require.Equal(t, "1000000", ent.header.Get("x-ratelimit-tokens-limit"))
}
