package calendar

import (
	"testing"

	"github.com/tokenbudget/tokenbudget/internal/wasmdeps"
)

// This package is compiled into the filter module, which must not link
// syscall (Envoy traps its init); see internal/wasmdeps.
func TestWasmBuildLinksNoSyscall(t *testing.T) {
	wasmdeps.RequireNoSyscall(t, "github.com/tokenbudget/tokenbudget/shared/calendar")
}
