package jsonx

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tokenbudget/tokenbudget/internal/wasmdeps"
)

// The whole point of this package: linking syscall (directly or through time,
// os, fmt) makes Envoy trap the VM during _initialize.
func TestWasmBuildLinksNoSyscall(t *testing.T) {
	run := func(args ...string) []string {
		cmd := exec.Command("go", args...)
		cmd.Env = append(cmd.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Fields(string(out))
	}
	wasmdeps.RequireNoSyscall(t, "github.com/tokenbudget/tokenbudget/shared/jsonx")
	allowed := map[string]bool{"errors": true, "math": true, "math/bits": true, "strconv": true,
		"unicode/utf8": true, "unicode/utf16": true, "unsafe": true}
	for _, imp := range run("list", "-f", `{{join .Imports " "}}`, ".") {
		require.True(t, allowed[imp], "jsonx imports %s, which is not on the allow-list", imp)
	}
}
