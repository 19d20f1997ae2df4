package redistest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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

// TestAServerDiesWithTheProcessThatStartedIt runs twice: as the test, it
// starts itself again as a child that starts a server, prints its address
// and waits; then it SIGKILLs the child, so no cleanup runs, and the server
// must go too. A fuzz worker killed by its coordinator is such a child.
func TestAServerDiesWithTheProcessThatStartedIt(t *testing.T) {
	if os.Getenv("REDISTEST_CHILD") == "1" {
		fmt.Println("addr=" + Start(t))
		select {}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAServerDiesWithTheProcessThatStartedIt$")
	cmd.Env = append(os.Environ(), "REDISTEST_CHILD=1")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var addr string
	for lines := bufio.NewScanner(out); addr == "" && lines.Scan(); {
		addr, _ = strings.CutPrefix(lines.Text(), "addr=")
	}
	require.NotEmpty(t, addr, "the child printed its server's address")
	require.Equal(t, "PONG", command(addr, "PING"))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for command(addr, "PING") == "PONG" {
		require.True(t, time.Now().Before(deadline), "redis-server on %s outlived the process that started it", addr)
		time.Sleep(20 * time.Millisecond)
	}
}
