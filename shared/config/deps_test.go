package config

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Envoy traps any host call outside its _initialize allowlist, and Go's
// syscall package makes one (fd_fdstat_get) in its wasip1 init; time, os and
// fmt all lead to syscall. This package is linked into the .wasm, so none of
// them may appear in its dependency graph.
func TestWasmBuildLinksNoSyscall(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "syscall", "os", "time", "fmt":
			t.Errorf("GOOS=wasip1 dependency graph contains %s", pkg)
		}
	}
}
