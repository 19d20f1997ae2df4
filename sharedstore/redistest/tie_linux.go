//go:build linux

package redistest

import (
	"os/exec"
	"syscall"
)

// DieWithParent asks the kernel to SIGKILL cmd's process when the process
// that started it dies, however it dies. A server that outlived its test
// would keep the test's inherited file descriptors open: a fuzz worker's
// pipes to its coordinator are not close-on-exec, so an orphaned
// redis-server holding one leaves `go test -fuzz` waiting on it forever.
//
// Linux sends the signal when the starting *thread* exits; Go ends a thread
// only when a goroutine locked to it returns without unlocking, which
// nothing that starts servers does.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
