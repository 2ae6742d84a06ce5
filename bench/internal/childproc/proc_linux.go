package childproc

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the child get SIGKILL when the parent dies.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
