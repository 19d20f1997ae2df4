package estimate

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Envoy traps a module whose _initialize calls anything beyond a short WASI
// allowlist, and Go's syscall init does; so nothing the filter links from
// this package may pull in syscall, or os, time and fmt that import it.
func TestPackageLinksNoSyscallUnderWasip1(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	// The list is real: it holds the package itself and its JSON reader.
	require.Contains(t, deps, "github.com/tokenbudget/tokenbudget/shared/estimate")
	require.Contains(t, deps, "github.com/tokenbudget/tokenbudget/shared/jsonx")
	for _, banned := range []string{"syscall", "os", "time", "fmt"} {
		require.NotContains(t, deps, banned, "%s is linked into the filter", banned)
	}
}
