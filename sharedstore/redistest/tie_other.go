//go:build !linux && !wasip1

package redistest

import "os/exec"

// DieWithParent does nothing where the kernel has no parent-death signal;
// a server there outlives a test that is killed before its cleanup.
func DieWithParent(cmd *exec.Cmd) {}
