package wire

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWasmBuildLinksNoSyscall pins that this package stays startable in
// Envoy: syscall's wasip1 init calls fd_fdstat_get, which the proxy-wasm host
// traps while _initialize runs, and time, os and fmt all pull syscall in.
func TestWasmBuildLinksNoSyscall(t *testing.T) {
	readSources(t) // so go test's cache reruns this when a source file changes
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go test puts the go command on PATH")
	cmd := exec.Command(goBin, "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/tokenbudget/tokenbudget/shared/wire", "go list listed the package itself")
	for _, dep := range deps {
		switch dep {
		case "syscall", "os", "time", "fmt":
			t.Errorf("GOOS=wasip1 dependency graph contains %s", dep)
		}
	}
}

// readSources reads the package's files: go test caches a result keyed on
// the files the test opened, and the go list subprocess opens them unseen.
func readSources(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			_, err := os.ReadFile(e.Name())
			require.NoError(t, err)
		}
	}
}
