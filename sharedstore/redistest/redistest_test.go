package redistest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStartAnswersPingAndHasPersistenceOff(t *testing.T) {
	addr := Start(t)
	require.Equal(t, "PONG", command(addr, "PING"))
	require.Contains(t, command(addr, "INFO", "persistence"), "aof_enabled:0")
}

func TestStartClusterReachesStateOK(t *testing.T) {
	addrs := StartCluster(t, 3)
	require.Len(t, addrs, 3)
	for _, a := range addrs {
		require.True(t, strings.Contains(command(a, "CLUSTER", "INFO"), "cluster_state:ok"))
	}
}
