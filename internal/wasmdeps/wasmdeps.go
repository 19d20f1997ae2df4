// Package wasmdeps lets each package compiled into the .wasm pin that it
// stays startable in Envoy: proxy-wasm-cpp-host traps any WASI call outside
// a short allowlist while _initialize runs, and Go's syscall package calls
// fd_fdstat_get from its wasip1 init. time, os and fmt all import syscall.
// filter/imports_test.go checks the whole module; this check fails next to
// the package that brought the import in.
package wasmdeps

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Banned are the packages that link syscall (or are syscall).
var Banned = []string{"syscall", "os", "time", "fmt"}

// RequireNoSyscall fails when the current directory's package, built for
// GOOS=wasip1, depends on a Banned package. It reads the package's sources
// first so go test's cache reruns the check whenever one of them changes
// (the go list subprocess opens them where the cache cannot see).
func RequireNoSyscall(t *testing.T, importPath string) {
	t.Helper()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") {
			_, err := os.ReadFile(e.Name())
			require.NoError(t, err)
		}
	}
	goBin, err := exec.LookPath("go")
	require.NoError(t, err, "go test puts the go command on PATH")
	cmd := exec.Command(goBin, "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, importPath, "go list listed the package itself")
	for _, b := range Banned {
		require.NotContains(t, deps, b, "%s links %s into the filter module", importPath, b)
	}
}
