package usage

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWasmBuildLinksNoSyscall pins why this package reads JSON with jsonx:
// Envoy traps a module whose _initialize calls fd_fdstat_get, which Go's
// syscall init does on wasip1, and time, os and fmt all pull syscall in.
func TestWasmBuildLinksNoSyscall(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go list: %s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/tokenbudget/tokenbudget/shared/usage", "go list must list the package itself")
	var linked []string
	for _, dep := range deps {
		switch dep {
		case "syscall", "os", "time", "fmt":
			linked = append(linked, dep)
		}
	}
	require.Empty(t, linked, "the wasip1 build of shared/usage links these")
}
