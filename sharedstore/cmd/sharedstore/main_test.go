package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestRedisURLSelectsSingleServerOrCluster(t *testing.T) {
	tests := []struct {
		url     string
		cluster bool
		addrs   []string
		wantErr bool
	}{
		{url: "redis://127.0.0.1:6379/2", addrs: []string{"127.0.0.1:6379"}},
		{url: "redis-cluster://a:7000,b:7001", cluster: true, addrs: []string{"a:7000", "b:7001"}},
		{url: "redis-cluster://", wantErr: true},
		{url: "memcached://x", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			c, err := newClient(tt.url, 7)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			defer c.Close()
			if tt.cluster {
				cc, ok := c.(*redis.ClusterClient)
				require.True(t, ok)
				require.Equal(t, tt.addrs, cc.Options().Addrs)
				require.Equal(t, 7, cc.Options().PoolSize)
			} else {
				sc, ok := c.(*redis.Client)
				require.True(t, ok)
				require.Equal(t, tt.addrs[0], sc.Options().Addr)
				require.Equal(t, 2, sc.Options().DB)
			}
		})
	}
}

func TestTokenComesFromFileOrEnvAndMustNotBeEmpty(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(f, []byte("  s3cret\n"), 0o600))
	t.Setenv("SHAREDSTORE_TOKEN", "from-env")
	tok, err := readToken(f)
	require.NoError(t, err)
	require.Equal(t, "s3cret", tok)
	tok, err = readToken("")
	require.NoError(t, err)
	require.Equal(t, "from-env", tok)
	t.Setenv("SHAREDSTORE_TOKEN", " ")
	_, err = readToken("")
	require.Error(t, err)
}

func TestRedactURLHidesThePassword(t *testing.T) {
	require.NotContains(t, redactURL("redis://user:hunter2@h:1/0"), "hunter2")
}
