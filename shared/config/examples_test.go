package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/shared/money"
	"github.com/tokenbudget/tokenbudget/shared/spend"
)

func loadExample(t *testing.T, name string) (*Runtime, []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "configs", name))
	require.NoError(t, err)
	rt, w, err := Load(raw)
	require.NoError(t, err)
	return rt, w
}

func TestTiersExampleGivesEachTierItsOwnKeyBudget(t *testing.T) {
	t.Parallel()
	rt, w := loadExample(t, "tiers.json")
	require.Empty(t, w)
	got := map[string]int64{}
	for _, key := range []string{"sk-free-demo", "sk-pro-demo", "sk-enterprise-demo"} {
		k := rt.Key(sha(key))
		require.True(t, k.Known, key)
		got[k.Tier] = rt.APIKeyRules(k).Tokens.Minute.Capacity
	}
	require.Equal(t, map[string]int64{"free": 10000, "pro": 100000, "enterprise": 1000000}, got)
	batch := rt.APIKeyRules(rt.Key(sha("sk-pro-batch")))
	require.Equal(t, limited(20000), batch.Tokens.Minute)
	require.Equal(t, RequestLimits{PerSecond: 2, Burst: 4, PerMinute: 100, PerDay: 10000}, batch.Requests)
	require.True(t, rt.Exempt(mustAddr(t, "203.0.113.1"), sha("sk-bypass-demo")))
	require.True(t, rt.Exempt(mustAddr(t, "198.51.100.7"), ""), "the example's whitelisted host")
}

// The shipped examples are tried through the local gateway, whose clients
// are on loopback: an example that exempted loopback would never limit.
func TestNoExampleConfigExemptsLoopbackClients(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(filepath.Join("..", "..", "examples", "configs"))
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		t.Run(e.Name(), func(t *testing.T) {
			rt, _ := loadExample(t, e.Name())
			for _, a := range []string{"127.0.0.1", "127.3.4.5", "::1", "::ffff:127.0.0.1"} {
				require.False(t, rt.Exempt(mustAddr(t, a), ""), a)
			}
		})
	}
}

func TestPerModelExampleDividesModelBudgetsAndKeepsRequestLimits(t *testing.T) {
	rt, w := loadExample(t, "per-model.json")
	require.Empty(t, w)
	c4, ok := rt.Model("claude-4")
	require.True(t, ok)
	require.Equal(t, TokenBudget{Minute: limited(66666), Day: limited(1666666)}, c4.Tokens)
	require.Equal(t, int64(5), c4.Requests.Concurrent)
	require.Equal(t, int64(8192), c4.MaxTokensPerRequest)
	require.False(t, c4.Clamp)
	vision, _ := rt.Model("claude-4-vision")
	require.True(t, vision.Clamp)
	require.Equal(t, int64(3), vision.Requests.Concurrent)
	gpt, _ := rt.Model("gpt-4.1")
	require.Equal(t, limited(50000), gpt.Tokens.Minute)
	require.Equal(t, unlimited, gpt.Tokens.Day)
	require.Equal(t, int64(600), gpt.Requests.PerMinute)
	_, ok = rt.Model("unlisted")
	require.False(t, ok)
	require.Equal(t, "x-model", rt.ModelHeader)
}

func TestSpendExampleGivesTheDemoKeyADailyAndMonthlyLimit(t *testing.T) {
	t.Parallel()
	rt, w := loadExample(t, "spend.json")
	require.Len(t, w, 1, "only the per-Envoy counters warning: %v", w)
	require.Contains(t, w[0], "spend is counted per Envoy")
	k := rt.Key(sha("sk-spend-demo"))
	require.True(t, k.Known)
	p := rt.SpendPolicy(k, k.User, k.Team)
	require.Equal(t, spend.Limit{Amount: 50_000_000, Set: true}, p.Limits[spend.KeyDay], "$0.05")
	require.Equal(t, spend.Limit{Amount: money.OneUSD, Set: true}, p.Limits[spend.KeyMonth])
	require.Equal(t, spend.Limit{Amount: 200 * money.OneUSD, Set: true}, p.Limits[spend.TeamMonth])
	require.Equal(t, "spend-demo", p.APIKey)
	_, priced := rt.Price("some-new-model")
	require.True(t, priced, "the default entry prices unknown models")
}
