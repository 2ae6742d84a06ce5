package etcdtest

import "syscall"

// memberProcAttr makes the kernel kill a member once the test process is
// gone, so a test binary that dies without its cleanups (a panic, a
// timeout, a signal) leaves no etcd running.
func memberProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
